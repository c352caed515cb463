package acceptance

import (
	"encoding/json"
	"reflect"
	"testing"
)

// decodeGemini reassembles a Gemini GenerateContentResponse stream the way
// Gemini CLI does: text parts concatenated, one call per functionCall part.
func decodeGemini(t *testing.T, evs []sseEvent) decoded {
	t.Helper()
	var d decoded
	for _, e := range evs {
		b, _ := json.Marshal(e.data)
		var resp struct {
			Candidates []struct {
				Content struct {
					Parts []struct {
						Text         string
						FunctionCall *struct {
							Name string
							Args map[string]any
						}
					}
				}
				FinishReason string
			}
		}
		if err := json.Unmarshal(b, &resp); err != nil || len(resp.Candidates) != 1 {
			t.Fatalf("event %s: %v", b, err)
		}
		for _, p := range resp.Candidates[0].Content.Parts {
			d.Text += p.Text
			if p.FunctionCall != nil {
				d.Calls = append(d.Calls, ToolCall{Name: p.FunctionCall.Name, Input: p.FunctionCall.Args})
			}
		}
		d.Stop = resp.Candidates[0].FinishReason
	}
	return d
}

func TestMockGemini(t *testing.T) {
	call := ToolCall{Name: "run_shell_command", Input: map[string]any{"command": "echo 'a \"b\"'", "description": "d"}}
	for _, c := range []struct {
		name  string
		reply Reply
		want  decoded
	}{
		{"text", Reply{Text: "hello"}, decoded{Text: "hello", Stop: "STOP"}},
		{"text and a call", Reply{Text: "running", Calls: []ToolCall{call}}, decoded{Text: "running", Calls: []ToolCall{call}, Stop: "STOP"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := NewMock(func(*Request) Reply { return c.reply })
			defer m.Close()
			body := `{"contents":[{"role":"user","parts":[{"text":"<hook_context>brief</hook_context>\n\nhi"}]}]}`
			resp := post(t, m.URL()+"/v1beta/models/mock-model:streamGenerateContent?alt=sse", body)
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
				t.Fatalf("status %d, content type %q", resp.StatusCode, ct)
			}
			if got := decodeGemini(t, parseSSE(t, resp.Body)); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("decoded %+v, want %+v", got, c.want)
			}
			log := m.Requests()
			if len(log) != 1 || log[0].API != Gemini || !log[0].Contains("<hook_context>brief</hook_context>") {
				t.Fatalf("log %+v", log)
			}
		})
	}
	m := NewMock(func(*Request) Reply { return Reply{Text: "t"} })
	defer m.Close()
	resp := post(t, m.URL()+"/v1beta/models/mock-model:generateContent", `{"contents":[]}`)
	var out struct {
		Candidates []struct {
			Content struct{ Parts []struct{ Text string } }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.Header.Get("Content-Type") != "application/json" || out.Candidates[0].Content.Parts[0].Text != "t" {
		t.Fatalf("generateContent: %v %+v", err, out)
	}
}
