package acceptance

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	name string
	data map[string]any
	done bool // data: [DONE]
}

func parseSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			out, cur = append(out, cur), sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case line == "data: [DONE]":
			cur.done = true
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				t.Fatalf("event data %q: %v", line, err)
			}
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return out
}

// decoded is a reply reassembled from the wire the way a client does.
type decoded struct {
	Text  string
	Calls []ToolCall
	Stop  string
}

func args(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("tool arguments %q: %v", s, err)
	}
	return m
}

func decodeAnthropic(t *testing.T, evs []sseEvent) decoded {
	var d decoded
	partial := map[int]string{}
	names := map[int]string{}
	for _, e := range evs {
		if e.name != e.data["type"] {
			t.Fatalf("event %q carries type %v", e.name, e.data["type"])
		}
		switch e.name {
		case "content_block_start":
			cb := e.data["content_block"].(map[string]any)
			if cb["type"] == "tool_use" {
				names[int(e.data["index"].(float64))] = cb["name"].(string)
			}
		case "content_block_delta":
			delta := e.data["delta"].(map[string]any)
			i := int(e.data["index"].(float64))
			if delta["type"] == "text_delta" {
				d.Text += delta["text"].(string)
			} else {
				partial[i] += delta["partial_json"].(string)
			}
		case "message_delta":
			d.Stop = e.data["delta"].(map[string]any)["stop_reason"].(string)
		}
	}
	for i := 0; i < len(evs); i++ {
		if _, ok := names[i]; ok {
			d.Calls = append(d.Calls, ToolCall{Name: names[i], Input: args(t, partial[i])})
		}
	}
	if evs[0].name != "message_start" || evs[len(evs)-1].name != "message_stop" {
		t.Fatalf("event order %v", evs)
	}
	return d
}

func decodeResponses(t *testing.T, evs []sseEvent) decoded {
	var d decoded
	for _, e := range evs {
		if e.name != e.data["type"] {
			t.Fatalf("event %q carries type %v", e.name, e.data["type"])
		}
		switch e.name {
		case "response.output_text.delta":
			d.Text += e.data["delta"].(string)
		case "response.output_item.done":
			item := e.data["item"].(map[string]any)
			if item["type"] == "function_call" {
				ns, _ := item["namespace"].(string)
				d.Calls = append(d.Calls, ToolCall{Name: item["name"].(string), Namespace: ns, Input: args(t, item["arguments"].(string))})
			}
		case "response.completed":
			resp := e.data["response"].(map[string]any)
			d.Stop = resp["status"].(string)
			if resp["usage"] == nil {
				t.Fatal("response.completed without usage")
			}
		}
	}
	if evs[0].name != "response.created" || evs[len(evs)-1].name != "response.completed" {
		t.Fatalf("event order %v", evs)
	}
	return d
}

func decodeChat(t *testing.T, evs []sseEvent) decoded {
	var d decoded
	if !evs[len(evs)-1].done {
		t.Fatal("no data: [DONE]")
	}
	for _, e := range evs[:len(evs)-1] {
		if e.name != "" {
			t.Fatalf("chat chunks are data-only, got event %q", e.name)
		}
		ch := e.data["choices"].([]any)[0].(map[string]any)
		delta := ch["delta"].(map[string]any)
		if s, ok := delta["content"].(string); ok {
			d.Text += s
		}
		if calls, ok := delta["tool_calls"].([]any); ok {
			for _, c := range calls {
				f := c.(map[string]any)["function"].(map[string]any)
				d.Calls = append(d.Calls, ToolCall{Name: f["name"].(string), Input: args(t, f["arguments"].(string))})
			}
		}
		if s, ok := ch["finish_reason"].(string); ok {
			d.Stop = s
		}
	}
	return d
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestMockStreams(t *testing.T) {
	call := ToolCall{Name: "Bash", Input: map[string]any{"command": "echo 'a \"b\"' <c> & d"}}
	spawn := ToolCall{Name: "spawn_agent", Namespace: "multi_agent_v1", Input: map[string]any{"message": "go"}}
	cases := []struct {
		name, path, body string
		reply            Reply
		decode           func(*testing.T, []sseEvent) decoded
		want             decoded
	}{
		{"anthropic text", "/v1/messages?beta=true", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			Reply{Text: "hello"}, decodeAnthropic, decoded{Text: "hello", Stop: "end_turn"}},
		{"anthropic text and tools", "/v1/messages", `{"stream":true,"messages":[]}`,
			Reply{Text: "running", Calls: []ToolCall{call, {Name: "Agent"}}}, decodeAnthropic,
			decoded{Text: "running", Calls: []ToolCall{call, {Name: "Agent", Input: map[string]any{}}}, Stop: "tool_use"}},
		{"responses text", "/v1/responses", `{"model":"m","input":[]}`,
			Reply{Text: "hello"}, decodeResponses, decoded{Text: "hello", Stop: "completed"}},
		{"responses namespaced call", "/v1/responses", `{"input":[]}`,
			Reply{Calls: []ToolCall{spawn}}, decodeResponses, decoded{Calls: []ToolCall{spawn}, Stop: "completed"}},
		{"chat text", "/v1/chat/completions", `{"stream":true,"messages":[]}`,
			Reply{Text: "hello"}, decodeChat, decoded{Text: "hello", Stop: "stop"}},
		{"chat tool", "/v1/chat/completions", `{"stream":true,"messages":[]}`,
			Reply{Calls: []ToolCall{call}}, decodeChat, decoded{Calls: []ToolCall{call}, Stop: "tool_calls"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := NewMock(func(*Request) Reply { return c.reply })
			defer m.Close()
			resp := post(t, m.URL()+c.path, c.body)
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
				t.Fatalf("status %d, content type %q", resp.StatusCode, ct)
			}
			if got := c.decode(t, parseSSE(t, resp.Body)); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("decoded %+v, want %+v", got, c.want)
			}
			log := m.Requests()
			if len(log) != 1 || string(log[0].Body) != c.body || log[0].Path != strings.Split(c.path, "?")[0] {
				t.Fatalf("log %+v", log)
			}
		})
	}
}

func TestMockNonStreaming(t *testing.T) {
	m := NewMock(func(*Request) Reply {
		return Reply{Text: "t", Calls: []ToolCall{{Name: "f", Input: map[string]any{"x": "1"}}}}
	})
	defer m.Close()
	var msg struct {
		Content []struct {
			Type, Text, Name string
			Input            map[string]any
		}
		StopReason string `json:"stop_reason"`
	}
	if err := json.NewDecoder(post(t, m.URL()+"/v1/messages", `{"messages":[]}`).Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 2 || msg.Content[0].Text != "t" || msg.Content[1].Name != "f" || msg.Content[1].Input["x"] != "1" || msg.StopReason != "tool_use" {
		t.Fatalf("message %+v", msg)
	}
	var cc struct {
		Choices []struct {
			Message struct {
				Content   string
				ToolCalls []struct {
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
	}
	if err := json.NewDecoder(post(t, m.URL()+"/v1/chat/completions", `{"messages":[]}`).Body).Decode(&cc); err != nil {
		t.Fatal(err)
	}
	if c := cc.Choices[0]; c.Message.Content != "t" || c.Message.ToolCalls[0].Function.Arguments != `{"x":"1"}` || c.FinishReason != "tool_calls" {
		t.Fatalf("completion %+v", cc)
	}
}

// The script sees every decoded string of the request (so a scripted model
// can read a hook's context wherever the API puts it) and may keep state.
func TestMockScriptSeesTextsAndLogsEverything(t *testing.T) {
	turns := 0
	m := NewMock(func(r *Request) Reply {
		turns++
		if r.Contains("needle <&>") {
			return Reply{Text: "found"}
		}
		return Reply{Text: "missing"}
	})
	defer m.Close()
	post(t, m.URL()+"/v1/responses", `{"input":[{"role":"developer","content":[{"type":"input_text","text":"a needle \u003c&\u003e b"}]}],"z":"last"}`)
	post(t, m.URL()+"/v1/responses", `{"input":[]}`)
	resp := post(t, m.URL()+"/v1/unknown", `{}`)
	bad := post(t, m.URL()+"/v1/messages", `[1]`)
	if resp.StatusCode != 404 || bad.StatusCode != 400 {
		t.Fatalf("unknown path %d, non-object body %d", resp.StatusCode, bad.StatusCode)
	}
	log := m.Requests()
	if turns != 2 || len(log) != 3 || log[2].Path != "POST /v1/unknown" {
		t.Fatalf("turns %d, log %+v", turns, log)
	}
	// Object values in key order, arrays in order: content before role,
	// text before type, input before z.
	if want := []string{"a needle <&> b", "input_text", "developer", "last"}; !reflect.DeepEqual(log[0].Texts, want) {
		t.Fatalf("texts %q", log[0].Texts)
	}
}

// FuzzMockRequest: any request body is either refused with 400 (not a JSON
// object) or logged verbatim and answered with a complete stream, for each
// API, without a panic.
func FuzzMockRequest(f *testing.F) {
	for _, s := range []string{`{"stream":true,"messages":[{"role":"user","content":"hi"}]}`, `{"input":[]}`, `[1]`, `"x"`, `{"stream":"yes"}`, `{`} {
		f.Add(s)
	}
	m := NewMock(func(r *Request) Reply {
		return Reply{Text: r.Text(), Calls: []ToolCall{{Name: "t", Input: map[string]any{"n": len(r.Body)}}}}
	})
	defer m.Close()
	f.Fuzz(func(t *testing.T, body string) {
		for _, api := range []API{Anthropic, Responses, Chat} {
			before := len(m.Requests())
			rec := httptest.NewRecorder()
			m.handle(api)(rec, httptest.NewRequest("POST", "/v1/x", strings.NewReader(body)))
			logged := len(m.Requests()) - before
			var obj map[string]any
			isObject := json.Unmarshal([]byte(body), &obj) == nil && obj != nil
			switch {
			case !isObject && (rec.Code != 400 || logged != 0):
				t.Fatalf("%s: non-object %q: status %d, %d logged", api, body, rec.Code, logged)
			case isObject && (rec.Code != 200 || logged != 1 || string(m.Requests()[before].Body) != body):
				t.Fatalf("%s: object %q: status %d, %d logged", api, body, rec.Code, logged)
			case isObject && !strings.Contains(rec.Body.String(), `"name":"t"`):
				t.Fatalf("%s: no tool call in %q", api, rec.Body.String())
			}
		}
	})
}
