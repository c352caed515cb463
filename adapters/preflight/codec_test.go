package preflight

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// The hook's receipt and output are written by hand-written encoders; these
// tests hold them to encoding/json's bytes for the same values.

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

func randReceipt(r *rand.Rand) Receipt {
	s := func() string { return randString(r) }
	n := func() int { return r.IntN(2001) - 1000 }
	return Receipt{
		SchemaVersion: n(), ProtocolVersion: n(), ReceiptID: s(), HarnessID: s(), AdapterVersion: s(),
		BridgeFingerprint: s(), StoreID: s(), ProjectRootFingerprint: s(), WorkerKeyFingerprint: s(),
		Session: Identity{AgentProfile: s(), WorkflowID: s(), SessionID: s()},
		State:   s(), QueryClass: s(), ResultCount: n(), SelectedMemoryIDsSHA256: s(),
		DurationMS: r.Int64() - r.Int64(), Status: s(), RecordedAt: s(),
	}
}

func TestReceiptEncodeMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []Receipt{{}, testReceipt()}
	for range 2000 {
		cases = append(cases, randReceipt(r))
	}
	for _, rc := range cases {
		if got, want := rc.Encode(), jsonLine(t, rc, "  "); !bytes.Equal(got, want) {
			t.Fatalf("Encode(%+v):\n%s\nwant\n%s", rc, got, want)
		}
	}
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

// FuzzReceiptEncode: any field values encode as encoding/json would, in
// the receipt and in the hook output.
func FuzzReceiptEncode(f *testing.F) {
	f.Add("receipt-1", "codex", "<&>\u2028", "\xff", 1, int64(-3))
	f.Fuzz(func(t *testing.T, a, b, c, d string, n int, m int64) {
		rc := Receipt{SchemaVersion: n, ReceiptID: a, HarnessID: b, AdapterVersion: c, Session: Identity{AgentProfile: d, WorkflowID: a, SessionID: c},
			State: b, QueryClass: d, ResultCount: -n, DurationMS: m, RecordedAt: a + b}
		if got, want := rc.Encode(), jsonLine(t, rc, "  "); !bytes.Equal(got, want) {
			t.Fatalf("Encode:\n%s\nwant\n%s", got, want)
		}
		checkHookOutput(t, a, c+d)
	})
}
