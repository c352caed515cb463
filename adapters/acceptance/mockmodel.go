package acceptance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
)

// API names the wire protocol of one model request.
type API string

const (
	Anthropic API = "anthropic-messages"      // POST /v1/messages (Claude Code)
	Responses API = "openai-responses"        // POST /v1/responses (Codex)
	Chat      API = "openai-chat-completions" // POST /v1/chat/completions (Pi, OpenCode)
	Gemini    API = "gemini-generate-content" // POST /v1beta/models/M:streamGenerateContent?alt=sse (Gemini CLI)
)

// maxBody bounds one logged request body: the clients send their whole
// conversation each turn, well under this.
const maxBody = 32 << 20

// Request is one logged model request: its API, path and raw body.
type Request struct {
	API  API
	Path string
	Body []byte
	// Texts is every JSON string value in Body, decoded, in document
	// order: what a model would read, whatever the API's message layout.
	Texts []string
}

// Text is Texts joined with newlines.
func (r *Request) Text() string { return strings.Join(r.Texts, "\n") }

// Contains reports whether some decoded string value holds s.
func (r *Request) Contains(s string) bool {
	for _, t := range r.Texts {
		if strings.Contains(t, s) {
			return true
		}
	}
	return false
}

// ToolCall is one function call the mock model makes. Namespace is the
// Responses API's tool namespace (Codex's multi_agent_v1), empty elsewhere.
type ToolCall struct {
	Name      string
	Namespace string
	Input     map[string]any
}

// Reply is what the mock model answers: optional text, then tool calls.
type Reply struct {
	Text  string
	Calls []ToolCall
}

// Script decides the reply to one request. It is called with the mock's
// lock held, one request at a time, so it may keep state without locking.
type Script func(*Request) Reply

// Mock is a local model server for the four APIs. It logs every request
// body and answers each with the Script's reply, streamed as the API's
// server-sent events (or as one JSON object when the request has no
// "stream": true). Safe for concurrent requests; Close stops it.
type Mock struct {
	srv    *httptest.Server
	mu     sync.Mutex
	script Script
	log    []*Request
	calls  int
}

// NewMock starts a mock on 127.0.0.1 answering with script (nil: the text
// "ok" to everything).
func NewMock(script Script) *Mock {
	if script == nil {
		script = func(*Request) Reply { return Reply{Text: "ok"} }
	}
	m := &Mock{script: script}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", m.handle(Anthropic))
	mux.HandleFunc("POST /v1/responses", m.handle(Responses))
	mux.HandleFunc("POST /v1/chat/completions", m.handle(Chat))
	mux.HandleFunc("POST /v1beta/models/", m.handle(Gemini))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		m.record(&Request{Path: r.Method + " " + r.URL.Path})
		http.NotFound(w, r)
	})
	m.srv = httptest.NewServer(mux)
	return m
}

// URL is the server's base URL, http://127.0.0.1:PORT (no trailing slash).
func (m *Mock) URL() string { return m.srv.URL }

// Close stops the server and waits for requests in flight.
func (m *Mock) Close() { m.srv.Close() }

// Requests returns the logged requests so far, in arrival order.
func (m *Mock) Requests() []*Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*Request(nil), m.log...)
}

func (m *Mock) record(r *Request) {
	m.mu.Lock()
	m.log = append(m.log, r)
	m.mu.Unlock()
}

func (m *Mock) handle(api API) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil || len(body) > maxBody {
			http.Error(w, "request body unreadable or too large", http.StatusRequestEntityTooLarge)
			return
		}
		var doc map[string]any
		if err := json.Unmarshal(body, &doc); err != nil {
			http.Error(w, "request body is not a JSON object: "+err.Error(), http.StatusBadRequest)
			return
		}
		req := &Request{API: api, Path: r.URL.Path, Body: body, Texts: stringValues(doc, nil)}
		stream, _ := doc["stream"].(bool)
		model, _ := doc["model"].(string)
		m.mu.Lock()
		m.log = append(m.log, req)
		m.calls++
		n := m.calls
		reply := m.script(req)
		m.mu.Unlock()
		id := fmt.Sprintf("mock-%d", n)
		if model == "" {
			model = "mock-model"
		}
		var buf bytes.Buffer
		switch {
		case api == Anthropic && stream:
			anthropicSSE(&buf, id, model, reply)
		case api == Anthropic:
			writeJSON(&buf, anthropicMessage(id, model, reply))
		case api == Responses:
			responsesSSE(&buf, id, model, reply)
		case api == Gemini:
			stream = strings.HasSuffix(r.URL.Path, ":streamGenerateContent")
			geminiReply(&buf, model, reply, stream)
		case stream:
			chatSSE(&buf, id, model, reply)
		default:
			writeJSON(&buf, chatCompletion(id, model, reply))
		}
		if api == Responses || stream {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.Write(buf.Bytes())
	}
}

// stringValues collects every string value of a decoded JSON document (keys
// excluded), depth first in document order for arrays; object values in
// key order.
func stringValues(v any, out []string) []string {
	switch x := v.(type) {
	case string:
		out = append(out, x)
	case []any:
		for _, e := range x {
			out = stringValues(e, out)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = stringValues(x[k], out)
		}
	}
	return out
}

func writeJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings, numbers and slices only
	}
	w.Write(b)
}

// event writes one server-sent event; name "" writes a data-only event.
func event(w io.Writer, name string, v any) {
	if name != "" {
		fmt.Fprintf(w, "event: %s\n", name)
	}
	io.WriteString(w, "data: ")
	writeJSON(w, v)
	io.WriteString(w, "\n\n")
}

func input(c ToolCall) map[string]any {
	if c.Input == nil {
		return map[string]any{}
	}
	return c.Input
}

func inputJSON(c ToolCall) string {
	var b bytes.Buffer
	writeJSON(&b, input(c))
	return b.String()
}

func callID(id string, i int) string {
	return fmt.Sprintf("call_%s_%d", strings.ReplaceAll(id, "-", "_"), i)
}

type obj = map[string]any

var usage = obj{"input_tokens": 10, "output_tokens": 5}

func anthropicBlocks(id string, r Reply) []obj {
	var blocks []obj
	if r.Text != "" {
		blocks = append(blocks, obj{"type": "text", "text": r.Text})
	}
	for i, c := range r.Calls {
		blocks = append(blocks, obj{"type": "tool_use", "id": "toolu_" + callID(id, i), "name": c.Name, "input": input(c)})
	}
	return blocks
}

func stopReason(r Reply, tool, end string) string {
	if len(r.Calls) > 0 {
		return tool
	}
	return end
}

func anthropicMessage(id, model string, r Reply) obj {
	return obj{"id": "msg_" + id, "type": "message", "role": "assistant", "model": model,
		"content": anthropicBlocks(id, r), "stop_reason": stopReason(r, "tool_use", "end_turn"),
		"stop_sequence": nil, "usage": usage}
}

// anthropicSSE: message_start, per block content_block_start /
// content_block_delta / content_block_stop, message_delta, message_stop.
func anthropicSSE(w io.Writer, id, model string, r Reply) {
	start := anthropicMessage(id, model, Reply{})
	start["content"], start["stop_reason"] = []obj{}, nil
	event(w, "message_start", obj{"type": "message_start", "message": start})
	call := 0
	for i, b := range anthropicBlocks(id, r) {
		var delta obj
		if b["type"] == "text" {
			delta = obj{"type": "text_delta", "text": b["text"]}
			b = obj{"type": "text", "text": ""}
		} else {
			delta = obj{"type": "input_json_delta", "partial_json": inputJSON(r.Calls[call])}
			b = obj{"type": "tool_use", "id": b["id"], "name": b["name"], "input": obj{}}
			call++
		}
		event(w, "content_block_start", obj{"type": "content_block_start", "index": i, "content_block": b})
		event(w, "content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": delta})
		event(w, "content_block_stop", obj{"type": "content_block_stop", "index": i})
	}
	event(w, "message_delta", obj{"type": "message_delta",
		"delta": obj{"stop_reason": stopReason(r, "tool_use", "end_turn"), "stop_sequence": nil}, "usage": obj{"output_tokens": 5}})
	event(w, "message_stop", obj{"type": "message_stop"})
}

// responsesSSE: response.created, per item output_item.added (text deltas
// for a message) and output_item.done, response.completed with usage.
func responsesSSE(w io.Writer, id, model string, r Reply) {
	resp := obj{"id": "resp_" + id, "object": "response", "model": model, "status": "in_progress", "output": []obj{}}
	event(w, "response.created", obj{"type": "response.created", "response": resp})
	var items []obj
	if r.Text != "" {
		msgID := "msg_" + id
		item := obj{"type": "message", "id": msgID, "role": "assistant", "status": "in_progress", "content": []obj{}}
		event(w, "response.output_item.added", obj{"type": "response.output_item.added", "output_index": len(items), "item": item})
		event(w, "response.output_text.delta", obj{"type": "response.output_text.delta", "item_id": msgID,
			"output_index": len(items), "content_index": 0, "delta": r.Text})
		done := obj{"type": "message", "id": msgID, "role": "assistant", "status": "completed",
			"content": []obj{{"type": "output_text", "text": r.Text, "annotations": []obj{}}}}
		event(w, "response.output_item.done", obj{"type": "response.output_item.done", "output_index": len(items), "item": done})
		items = append(items, done)
	}
	for i, c := range r.Calls {
		item := obj{"type": "function_call", "id": "fc_" + callID(id, i), "call_id": callID(id, i),
			"name": c.Name, "arguments": inputJSON(c), "status": "completed"}
		if c.Namespace != "" {
			item["namespace"] = c.Namespace
		}
		event(w, "response.output_item.added", obj{"type": "response.output_item.added", "output_index": len(items), "item": item})
		event(w, "response.output_item.done", obj{"type": "response.output_item.done", "output_index": len(items), "item": item})
		items = append(items, item)
	}
	resp["status"], resp["output"] = "completed", items
	resp["usage"] = obj{"input_tokens": 10, "input_tokens_details": obj{"cached_tokens": 0},
		"output_tokens": 5, "output_tokens_details": obj{"reasoning_tokens": 0}, "total_tokens": 15}
	event(w, "response.completed", obj{"type": "response.completed", "response": resp})
}

func chatToolCalls(id string, r Reply) []obj {
	var calls []obj
	for i, c := range r.Calls {
		calls = append(calls, obj{"index": i, "id": callID(id, i), "type": "function",
			"function": obj{"name": c.Name, "arguments": inputJSON(c)}})
	}
	return calls
}

func chatCompletion(id, model string, r Reply) obj {
	msg := obj{"role": "assistant", "content": r.Text}
	if len(r.Calls) > 0 {
		msg["tool_calls"] = chatToolCalls(id, r)
	}
	return obj{"id": "chatcmpl-" + id, "object": "chat.completion", "created": 0, "model": model,
		"choices": []obj{{"index": 0, "message": msg, "finish_reason": stopReason(r, "tool_calls", "stop")}},
		"usage":   obj{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
}

// chatSSE: data-only chunks (role, content, tool calls, finish reason with
// usage), then data: [DONE].
func chatSSE(w io.Writer, id, model string, r Reply) {
	chunk := func(delta obj, finish any, extra obj) {
		c := obj{"id": "chatcmpl-" + id, "object": "chat.completion.chunk", "created": 0, "model": model,
			"choices": []obj{{"index": 0, "delta": delta, "finish_reason": finish}}}
		for k, v := range extra {
			c[k] = v
		}
		event(w, "", c)
	}
	chunk(obj{"role": "assistant", "content": ""}, nil, nil)
	if r.Text != "" {
		chunk(obj{"content": r.Text}, nil, nil)
	}
	if len(r.Calls) > 0 {
		chunk(obj{"tool_calls": chatToolCalls(id, r)}, nil, nil)
	}
	chunk(obj{}, stopReason(r, "tool_calls", "stop"),
		obj{"usage": obj{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	io.WriteString(w, "data: [DONE]\n\n")
}
