package events

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

const (
	testRunID = "01M6A6FT000000000000000001"
	testScope = "0123456789abcdef01234567"
	testTime  = "2026-11-01T12:00:00.000Z"
)

// runEnvelope wraps a raw payload in an envelope of typ on the run's stream.
func runEnvelope(typ, payload string) *Envelope {
	id, _ := ulid.ParseStrict("01M6A6FT000000000000000009")
	return &Envelope{ID: id, Stream: RunStream(testRunID), Type: typ, SchemaVersion: 1,
		RecordedAt: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), Actor: "cli", Payload: json.RawMessage(payload)}
}

func TestRunPayloadsStrict(t *testing.T) {
	started := `{"run_id":"` + testRunID + `","scope_key":"` + testScope + `","command":"integrations hook","harness":"claude-code","stage":"start","pid":42,"started_at":"` + testTime + `","input_sha256":"` + strings.Repeat("a", 64) + `","input_chars":12}`
	finished := `{"run_id":"` + testRunID + `","scope_key":"` + testScope + `","status":"succeeded","stage":"done","ended_at":"` + testTime + `","duration_ms":5,"telemetry":{"query_class":"startup_fallback","result_count":0,"receipt_id":"receipt-01","items":3}}`
	interrupted := `{"run_id":"` + testRunID + `","scope_key":"` + testScope + `","pid":42,"detected_at":"` + testTime + `","detected_by_pid":43}`
	cases := []struct {
		name, typ, payload, want string // want: "" accepted, else a fragment of the error
	}{
		{"started", TypeRunStarted, started, ""},
		{"finished", TypeRunFinished, finished, ""},
		{"interrupted", TypeRunInterrupted, interrupted, ""},
		{"failed with code", TypeRunFinished, strings.Replace(strings.Replace(finished, `"succeeded"`, `"failed"`, 1), `"duration_ms":5`, `"duration_ms":5,"diagnostic":"ledger_locked"`, 1), ""},

		{"extra key", TypeRunStarted, strings.Replace(started, `"pid":42`, `"pid":42,"prompt":"p"`, 1), `unknown key "prompt"`},
		{"extra nested key", TypeRunFinished, strings.Replace(finished, `"items":3`, `"items":3,"tool":"bash"`, 1), `unknown key "tool"`},
		{"duplicate key", TypeRunStarted, strings.Replace(started, `"pid":42`, `"pid":42,"pid":43`, 1), `duplicate key "pid"`},
		{"error text", TypeRunFinished, strings.Replace(finished, `"duration_ms":5`, `"duration_ms":5,"error":"boom"`, 1), `unknown key "error"`},
		{"running is not terminal", TypeRunFinished, strings.Replace(finished, `"succeeded"`, `"running"`, 1), "status"},
		{"failed without code", TypeRunFinished, strings.Replace(finished, `"succeeded"`, `"failed"`, 1), "diagnostic"},
		{"code on success", TypeRunFinished, strings.Replace(finished, `"duration_ms":5`, `"duration_ms":5,"diagnostic":"x"`, 1), "diagnostic"},
		{"diagnostic is text", TypeRunFinished, strings.Replace(strings.Replace(finished, `"succeeded"`, `"failed"`, 1), `"duration_ms":5`, `"duration_ms":5,"diagnostic":"open /home/u: denied"`, 1), "diagnostic"},
		{"unknown command", TypeRunStarted, strings.Replace(started, `"integrations hook"`, `"rm -rf"`, 1), "command"},
		{"stage too long", TypeRunStarted, strings.Replace(started, `"start"`, `"`+strings.Repeat("s", 33)+`"`, 1), "stage"},
		{"stage with a space", TypeRunStarted, strings.Replace(started, `"start"`, `"fix bug"`, 1), "stage"},
		{"scope key short", TypeRunStarted, strings.Replace(started, testScope, "0123", 1), "scope_key"},
		{"scope key upper", TypeRunStarted, strings.Replace(started, testScope, strings.ToUpper(testScope), 1), "scope_key"},
		{"run id lower", TypeRunStarted, strings.Replace(started, `"run_id":"`+testRunID, `"run_id":"`+strings.ToLower(testRunID), 1), "run_id"},
		{"pid zero", TypeRunStarted, strings.Replace(started, `"pid":42`, `"pid":0`, 1), "pid"},
		{"local time", TypeRunStarted, strings.Replace(started, testTime, "2026-11-01T12:00:00.000+01:00", 1), "started_at"},
		{"chars without digest", TypeRunStarted, strings.Replace(started, `"input_sha256":"`+strings.Repeat("a", 64)+`",`, "", 1), "input_chars"},
		{"digest not hex", TypeRunStarted, strings.Replace(started, strings.Repeat("a", 64), strings.Repeat("g", 64), 1), "input_sha256"},
		{"negative duration", TypeRunFinished, strings.Replace(finished, `"duration_ms":5`, `"duration_ms":-1`, 1), "duration_ms"},
		{"query class free text", TypeRunFinished, strings.Replace(finished, `"startup_fallback"`, `"fix the login"`, 1), "query_class"},
		{"result count unbounded", TypeRunFinished, strings.Replace(finished, `"result_count":0`, `"result_count":1001`, 1), "result_count"},
		{"class without count", TypeRunFinished, strings.Replace(finished, `"result_count":0,`, "", 1), "go together"},
		{"receipt id with a slash", TypeRunFinished, strings.Replace(finished, `"receipt-01"`, `"../x"`, 1), "receipt_id"},
		{"harness upper", TypeRunStarted, strings.Replace(started, `"claude-code"`, `"Claude"`, 1), "harness"},
		{"detector pid", TypeRunInterrupted, strings.Replace(interrupted, `"detected_by_pid":43`, `"detected_by_pid":-1`, 1), "detected_by_pid"},
	}
	for _, c := range cases {
		_, err := DecodePayload(runEnvelope(c.typ, c.payload))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one naming %q", c.name, err, c.want)
		}
	}
}

// Rejected values are quoted at most 16 bytes long in messages.
func TestRunCheckMessagesAreBounded(t *testing.T) {
	long := strings.Repeat("x", 500)
	err := RunStarted{RunID: testRunID, ScopeKey: testScope, Command: long}.Check()
	if err == nil || len(err.Error()) > 120 {
		t.Fatalf("%v", err)
	}
}

func TestRunTime(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	s := FormatRunTime(at)
	if s != "2026-11-01T11:00:00.123Z" {
		t.Fatal(s)
	}
	if _, err := ParseRunTime(s); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"2026-11-01T11:00:00Z", "2026-11-01T11:00:00.1234Z", "2026-11-01 11:00:00.123Z"} {
		if _, err := ParseRunTime(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzRunPayloads feeds arbitrary payloads to the strict decoder of each
// run event type: it never panics, and whatever it accepts re-encodes to a
// payload that decodes to the same value (no field is silently dropped).
func FuzzRunPayloads(f *testing.F) {
	f.Add(0, `{"run_id":"`+testRunID+`","scope_key":"`+testScope+`","command":"capture","stage":"start","pid":1,"started_at":"`+testTime+`"}`)
	f.Add(1, `{"run_id":"`+testRunID+`","scope_key":"`+testScope+`","status":"failed","stage":"fold","ended_at":"`+testTime+`","duration_ms":0,"diagnostic":"usage","telemetry":{"items":1}}`)
	f.Add(2, `{"run_id":"`+testRunID+`","scope_key":"`+testScope+`","pid":9,"detected_at":"`+testTime+`","detected_by_pid":10}`)
	f.Add(1, `{"run_id":"`+testRunID+`","telemetry":{"query_class":"task_hint","result_count":8,"x":1}}`)
	f.Add(0, `{"run_id":1e999}`)
	f.Add(math.MinInt64, `{}`)
	types := []string{TypeRunStarted, TypeRunFinished, TypeRunInterrupted}
	f.Fuzz(func(t *testing.T, which int, payload string) {
		typ := types[uint(which)%uint(len(types))] // -MinInt64 is MinInt64: no negation

		v, err := DecodePayload(runEnvelope(typ, payload))
		if err != nil {
			return
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		w, err := DecodePayload(runEnvelope(typ, string(again)))
		if err != nil {
			t.Fatalf("re-encoded payload rejected: %v\n%s", err, again)
		}
		third, _ := json.Marshal(w)
		if string(third) != string(again) {
			t.Fatalf("round trip differs:\n%s\n%s", again, third)
		}
	})
}
