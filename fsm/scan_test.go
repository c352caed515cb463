package fsm

import (
	"errors"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/strictjson"
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

// TestPayloadCoreEscapedKeys: a key spelled with JSON escapes is the same
// key to replay as to the strict decoder that validated the event (issue
// 18: "\u0072eceipt_id" was read as absent, so a pruned receipt kept
// counting as proof; an escaped "to" made replay refuse a valid file).
func TestPayloadCoreEscapedKeys(t *testing.T) {
	l := newLog(t)
	pr := l.prune("codex", "r-1", 'a')
	pr.Payload = []byte(strings.Replace(string(pr.Payload), `"receipt_id"`, `"\u0072eceipt_id"`, 1))
	mv := l.prove("codex", ConfiguredAwaitingProof, Active, "r-1", 'a')
	mv.Payload = []byte(strings.NewReplacer(`"to"`, `"\u0074o"`, `"from"`, `"fr\u006fm"`).Replace(string(mv.Payload)))
	for _, e := range []*events.Envelope{pr, mv} {
		p, err := events.DecodePayload(e)
		if err != nil {
			t.Fatalf("strict: %v", err)
		}
		c, err := payloadCore(e)
		if err != nil || c != coreOf(p) {
			t.Fatalf("%s: replay reads %+v (%v), strict reads %+v", e.Payload, c, err, coreOf(p))
		}
	}
	// A key repeated through an escape is refused, as strict validation does.
	mv.Payload = []byte(strings.Replace(string(mv.Payload), `{`, `{"to":"active",`, 1))
	var dk *strictjson.DuplicateKeyError
	if _, err := payloadCore(mv); !errors.As(err, &dk) || dk.Key != "to" {
		t.Fatalf("duplicate by escape: %v", err)
	}
}

func TestPayloadCoreRejectsMalformed(t *testing.T) {
	l := newLog(t)
	e := *l.prune("codex", "r-1", 'a')
	for _, in := range []string{``, `[]`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":"x}`, `{"a":[1,2}`, `{"a":1}x`, `{"a":1 "b":2}`, `{1:2}`, `{"to":1}`} {
		e.Payload = []byte(in)
		if _, err := payloadCore(&e); err == nil {
			t.Errorf("payloadCore(%q) accepted", in)
		}
	}
}

// harnessTypes are the event types replay reads (the harness streams).
func harnessTypes() []string {
	var ts []string
	for _, typ := range events.Types() {
		if spec, _ := events.Lookup(typ); spec.StreamPrefix == events.HarnessPrefix {
			ts = append(ts, typ)
		}
	}
	return ts
}

// FuzzTopFields is the differential target of replay's payload reader:
// the same payload bytes go to payloadCore (the fast path) and to
// events.DecodePayload (the strict decoder that validates every event on
// append and import). Whatever the strict decoder accepts, the fast path
// must accept and read identically.
func FuzzTopFields(f *testing.F) {
	l := newLog(f)
	types := harnessTypes()
	index := func(typ string) uint8 {
		for i, t := range types {
			if t == typ {
				return uint8(i)
			}
		}
		f.Fatalf("%s is not a harness type", typ)
		return 0
	}
	for _, e := range []*events.Envelope{
		l.prove("codex", ConfiguredAwaitingProof, Active, "receipt-1", 'a'),
		l.publish("codex", Unsupported, ConfiguredAwaitingProof),
		l.prune("codex", "receipt-1", 'a'),
		l.drift("codex", Active),
	} {
		f.Add(index(e.Type), []byte(e.Payload))
		f.Add(index(e.Type), []byte(strings.NewReplacer(`"to"`, `"\u0074o"`, `"receipt_id"`, `"\u0072eceipt_id"`, `"harness_id"`, `"harness\u005fid"`).Replace(string(e.Payload))))
	}
	f.Add(uint8(0), []byte(`{"\b":[]}`))
	f.Add(uint8(0), []byte(`{"a":1,"\u0061":2}`))
	f.Fuzz(func(t *testing.T, which uint8, payload []byte) {
		e := events.Envelope{Stream: events.HarnessStream("codex"), Type: types[int(which)%len(types)], Payload: payload}
		spec, _ := events.Lookup(e.Type)
		e.SchemaVersion = spec.SchemaVersion
		fast, ferr := payloadCore(&e)
		p, serr := events.DecodePayload(&e)
		if serr != nil {
			return // never reaches replay: refused on append and import
		}
		if ferr != nil {
			t.Fatalf("%s %q: strict decoder accepts, replay refuses: %v", e.Type, payload, ferr)
		}
		if want := coreOf(p); fast != want {
			t.Fatalf("%s %q: replay reads %+v, strict decoder %+v", e.Type, payload, fast, want)
		}
	})
}
