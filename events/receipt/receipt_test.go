package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
)

func sample() Receipt {
	return Receipt{
		SchemaVersion: 1, ProtocolVersion: 1, ReceiptID: "receipt-01234567-89ab-4def-8123-456789abcdef",
		HarnessID: "claude-code", AdapterVersion: "4", BridgeFingerprint: strings.Repeat("b", 64),
		StoreID: "01234567-89ab-4def-8123-456789abcdef", ProjectRootFingerprint: strings.Repeat("a", 64),
		WorkerKeyFingerprint: strings.Repeat("e", 64), Session: Session{AgentProfile: "claude-code", WorkflowID: "workflow-01", SessionID: "session-01"},
		State: "active", QueryClass: "startup_fallback", ResultCount: 0,
		SelectedMemoryIDsSHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		DurationMS:              18, Status: "success", RecordedAt: "2026-08-13T12:00:00Z",
	}
}

func TestFileBytes(t *testing.T) {
	r := sample()
	got := r.Encode()
	want, err := os.ReadFile(filepath.Join("testdata", "receipt.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("receipt bytes differ from testdata/receipt.json:\n%s", got)
	}
	back, err := Decode(got)
	if err != nil || back != r {
		t.Fatalf("round trip: %+v %v", back, err)
	}
	sum := sha256Hex("claude-code")
	if p := r.Path(); p != ".tree-ring/activation/receipts/claude-code/"+sum+"/"+r.ReceiptID+".json" {
		t.Errorf("path %s", p)
	}
}

func TestDecodeRefusals(t *testing.T) {
	good := string(sample().Encode())
	cases := map[string]string{
		"unknown key":      strings.Replace(good, `"status"`, `"expires_at": "x", "status"`, 1),
		"missing status":   strings.Replace(good, `  "status": "success",`+"\n", "", 1),
		"bad id":           strings.Replace(good, "receipt-01234567", "receipt-x1234567", 1),
		"query class":      strings.Replace(good, "startup_fallback", "raw prompt", 1),
		"result count":     strings.Replace(good, `"result_count": 0`, `"result_count": 9`, 1),
		"recorded_at":      strings.Replace(good, "12:00:00Z", "12:00:00.5Z", 1),
		"session path":     strings.Replace(good, "session-01", "/home/u/session", 1),
		"short digest":     strings.Replace(good, strings.Repeat("e", 64), "eeee", 1),
		"duplicate key":    strings.Replace(good, `"status": "success"`, `"status": "success", "status": "success"`, 1),
		"not an object":    `[]`,
		"oversize padding": good[:len(good)-2] + strings.Repeat(" ", MaxBytes) + "}",
	}
	for name, in := range cases {
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// jsonKeys are the top-level members of v's JSON.
func jsonKeys(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The payload carries every member of the file but the constant
// schema_version, with the same values, and the summary every member but
// the session and state: a field added to Receipt and not carried fails
// here.
func TestRecordedAndSummaryCarryTheFile(t *testing.T) {
	r := sample()
	file := jsonKeys(t, r)
	payload := jsonKeys(t, r.Recorded(strings.Repeat("f", 64), r.Path()))
	summary := jsonKeys(t, r.Summary())
	for k, v := range file {
		if p, ok := payload[k]; k != "schema_version" && (!ok || !reflect.DeepEqual(p, v)) {
			t.Errorf("payload %s = %v, want %v", k, p, v)
		}
		if s, ok := summary[k]; k != "session" && k != "state" && (!ok || !reflect.DeepEqual(s, v)) {
			t.Errorf("summary %s = %v, want %v", k, s, v)
		}
	}
	if len(payload) != len(file)-1+2 || len(summary) != len(file)-2 {
		t.Errorf("payload %d members, summary %d, file %d", len(payload), len(summary), len(file))
	}
	// The payload is the catalogue's and passes its check.
	p := r.Recorded(strings.Repeat("f", 64), r.Path())
	if _, err := eventstest.Factory("test").New(events.HarnessStream(r.HarnessID), events.TypeReceiptRecorded, &p); err != nil {
		t.Fatal(err)
	}
}

// TestSubagentProfileShape: the documented check, every part.
func TestSubagentProfileShape(t *testing.T) {
	long := strings.Repeat("t", 120)
	cases := map[string]bool{
		"claude-code:" + long + ":0123456789abcdef":   true,
		"claude-code:a:" + long + ":0123456789abcdef": true,
		"claude-code:" + long + ":0123456789ABCDEF":   false, // not lowercase hex
		"claude-code:" + long + ":0123456789abcdeg":   false, // not hex
		"claude-code:" + long + ":0123456789abcde":    false, // 15
		"claude-code:" + long + "0123456789abcdef":    false, // no digest part
		":" + long + ":0123456789abcdef":              false, // no harness
		"claude-code::0123456789abcdef":               false, // no type
		"claude-code:" + long + " x:0123456789abcdef": false, // unsafe type
	}
	for p, want := range cases {
		if got := SubagentProfile(p); got != want {
			t.Errorf("SubagentProfile(%q) = %v, want %v", p, got, want)
		}
	}
}

// FuzzDecodeReceipt: an accepted receipt re-encodes to bytes that decode to the
// same receipt.
func FuzzDecodeReceipt(f *testing.F) {
	f.Add(sample().Encode())
	b, _ := os.ReadFile(filepath.Join("testdata", "receipt.json"))
	f.Add(b)
	f.Add([]byte(`{"schema_version":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err != nil {
			return
		}
		back, err := Decode(r.Encode())
		if err != nil || back != r {
			t.Fatalf("re-encode: %+v %v", back, err)
		}
	})
}

// Every member of the file is required: absent or null, it is named.
func TestDecodeRequiresEveryMember(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(sample().Encode(), &doc); err != nil {
		t.Fatal(err)
	}
	try := func(name, want string, edit func(m map[string]any)) {
		t.Helper()
		m := map[string]any{}
		for k, v := range doc {
			m[k] = v
		}
		m["session"] = map[string]any{"agent_profile": "claude-code", "workflow_id": "workflow-01", "session_id": "session-01"}
		edit(m)
		b, _ := json.Marshal(m)
		_, err := Decode(b)
		var re *Error
		if !errors.As(err, &re) || re.Rule != 0 || re.Reason != "missing "+want {
			t.Errorf("%s: %v, want missing %s", name, err, want)
		}
	}
	for k := range doc {
		try("without "+k, k, func(m map[string]any) { delete(m, k) })
		try(k+" null", k, func(m map[string]any) { m[k] = nil })
	}
	for _, k := range []string{"agent_profile", "workflow_id", "session_id"} {
		try("session without "+k, "session", func(m map[string]any) { delete(m["session"].(map[string]any), k) })
		try("session "+k+" null", "session", func(m map[string]any) { m["session"].(map[string]any)[k] = nil })
	}
}
