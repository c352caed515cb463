package preflight

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// The hook's output is written by a hand-written encoder; these tests hold
// it to encoding/json's bytes for the same values (the receipt file's
// encoder is held to them in events/receipt).

// jsonLine is what a json.Encoder without HTML escaping writes for v, with
// indent (none when "").
func jsonLine(t testing.TB, v any, indent string) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pieces are string fragments that exercise every escape rule.
var pieces = []string{"", "a", "receipt-1", `"`, `\`, "\n", "\t", "\x00", "\x1f", "<", ">", "&", "\u2028", "\u2029", "\xff", "\xc3", "é", "日本", "\U0001f600", "\x7f"}

func randString(r *rand.Rand) string {
	var s string
	for n := r.IntN(5); n > 0; n-- {
		s += pieces[r.IntN(len(pieces))]
	}
	return s
}

func TestOutputsMatchEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		checkHookOutput(t, randString(r), randString(r))
	}
}

func checkHookOutput(t testing.TB, event, context string) {
	t.Helper()
	type specific struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	}
	want := jsonLine(t, struct {
		HookSpecificOutput specific `json:"hookSpecificOutput"`
	}{specific{event, context}}, "")
	if got := HookOutput(event, context); !bytes.Equal(got, want) {
		t.Fatalf("HookOutput(%q, %q) = %s, want %s", event, context, got, want)
	}
}

// FuzzHookOutput: any event and context encode as encoding/json would.
func FuzzHookOutput(f *testing.F) {
	f.Add("SessionStart", "<&>\u2028\xff")
	f.Fuzz(func(t *testing.T, event, context string) { checkHookOutput(t, event, context) })
}
