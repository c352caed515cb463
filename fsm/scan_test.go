package fsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events"
)

func TestPayloadCore(t *testing.T) {
	l := newLog(t)
	e := l.prove("codex", ConfiguredAwaitingProof, Active, "receipt-\"q\"", 'a')
	c, err := payloadCore(e)
	if err != nil {
		t.Fatal(err)
	}
	want := core{from: "configured-awaiting-proof", to: "active", harness: "codex", receipt: `receipt-"q"`, worker: worker('a')}
	if c != want {
		t.Fatalf("got %+v\nwant %+v", c, want)
	}
	// The scanner agrees with the strict decoder.
	p, err := events.DecodePayload(e)
	if err != nil || coreOf(p) != c {
		t.Fatalf("strict decoder: %+v %v", coreOf(p), err)
	}
	// Nested values (arrays of objects holding keys such as "path") are
	// skipped, not read.
	b := l.publish("codex", Unsupported, ConfiguredAwaitingProof)
	if c, err := payloadCore(b); err != nil || c.from != "unsupported" || c.to != "configured-awaiting-proof" || c.harness != "codex" {
		t.Fatalf("publish: %+v %v", c, err)
	}
	// A schema version other than the current one goes through the strict
	// decoder (and its upcasters), which refuses an unknown version.
	b.SchemaVersion = 2
	if _, err := payloadCore(b); err == nil || !strings.Contains(err.Error(), "schema_version 2 not supported") {
		t.Fatalf("future schema: %v", err)
	}
	b.Version, b.Position = 1, 1
	hs := func() error { _, err := Replay([]events.Envelope{*b}, l.now); return err }
	var re *ReplayError
	if err := hs(); !errors.As(err, &re) || re.Kind != BadEvent {
		t.Fatalf("replay of a future schema: %v", err)
	}
}

func TestTopFieldsRejectsMalformed(t *testing.T) {
	for _, in := range []string{``, `[]`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":"x}`, `{"a":[1,2}`, `{"a":1}x`, `{"a":1 "b":2}`, `{1:2}`} {
		if err := topFields([]byte(in), func(k, v []byte) error { return nil }); err == nil {
			t.Errorf("topFields(%q) accepted", in)
		}
	}
}

// FuzzTopFields: on any valid JSON object the scanner sees exactly the
// top-level keys and values encoding/json sees; on anything else it may
// fail but never panics.
func FuzzTopFields(f *testing.F) {
	l := newLog(f)
	for _, e := range []*events.Envelope{
		l.prove("codex", ConfiguredAwaitingProof, Active, "receipt-1", 'a'),
		l.publish("codex", Unsupported, ConfiguredAwaitingProof),
	} {
		f.Add([]byte(e.Payload))
	}
	f.Add([]byte(`{"a":"\"}{[","b":[{"c":"]"}],"d":-1.5e3,"e":null, "f" : true }`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got := map[string]string{}
		err := topFields(data, func(k, v []byte) error {
			got[string(k)] = string(v)
			return nil
		})
		var want map[string]json.RawMessage
		if json.Unmarshal(data, &want) != nil || want == nil {
			return // not an object: either answer is fine
		}
		if err != nil {
			t.Fatalf("valid object %q rejected: %v", data, err)
		}
		for k, v := range want {
			if strings.ContainsAny(k, "\"\\\uFFFD") {
				continue // escaped keys are passed raw; encoding/json rewrites invalid UTF-8
			}
			if g, ok := got[k]; !ok || g != string(bytes.TrimSpace(v)) {
				// duplicate keys: encoding/json keeps the last, so do we
				t.Fatalf("key %q: got %q, want %q", k, g, v)
			}
		}
	})
}
