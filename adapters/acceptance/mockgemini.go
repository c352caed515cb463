package acceptance

import (
	"fmt"
	"io"
)

// geminiReply writes r as the Gemini API's GenerateContentResponse: one
// candidate whose parts are the text and a functionCall per tool call,
// streamed as one SSE event (streamGenerateContent?alt=sse) or as the JSON
// object (generateContent).
func geminiReply(w io.Writer, model string, r Reply, stream bool) {
	var parts []obj
	if r.Text != "" {
		parts = append(parts, obj{"text": r.Text})
	}
	for _, c := range r.Calls {
		parts = append(parts, obj{"functionCall": obj{"name": c.Name, "args": input(c)}})
	}
	if parts == nil {
		parts = []obj{{"text": ""}}
	}
	resp := obj{
		"candidates":    []obj{{"content": obj{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": obj{"promptTokenCount": 10, "candidatesTokenCount": 2, "totalTokenCount": 12},
		"modelVersion":  model,
	}
	if !stream {
		writeJSON(w, resp)
		return
	}
	fmt.Fprint(w, "data: ")
	writeJSON(w, resp)
	fmt.Fprint(w, "\r\n\r\n")
}
