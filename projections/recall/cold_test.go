package recall

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/memory"
)

func sampleCold() cold {
	return cold{
		MemoryCaptured: events.MemoryCaptured{
			MemoryID: "mem_1", BodySHA256: strings.Repeat("ab", 32), CreatedAt: "2026-01-01T00:00:00.000000Z", UpdatedAt: "2026-01-02T00:00:00.000000Z",
			Project: "proj", AgentProfile: "claude-code", WorkflowID: "wf", SessionID: "s", OperationID: "op",
			Scope: "agent", Ring: "scar", EventType: "lesson", SourceType: "user", Salience: 0.125, Confidence: 1,
			Sensitivity: "normal", Retention: "normal", ExpiresAt: "2027-01-01T00:00:00.000000Z", Supersedes: []string{"mem_0", "界"},
			NeedsReview: true, ReviewedAt: "2026-01-03T00:00:00.000000Z", Redacted: true, Origin: "import",
		},
		SupersededBy: "mem_2", Claim: "cafe",
	}
}

func ptr[T any](v T) *T { return &v }

// coldPair is c's cold record and the hot record it is read with.
func coldPair(c *cold) ([]byte, hot) { return encodeCold(c), hotOf(&c.MemoryCaptured, 0) }

func TestColdRecordRoundTrips(t *testing.T) {
	empty := cold{MemoryCaptured: events.MemoryCaptured{BodySHA256: strings.Repeat("0", 64)}}
	// Times that FormatMemoryTime would not write back as they are stay
	// strings.
	odd := sampleCold()
	odd.CreatedAt, odd.ReviewedAt, odd.ExpiresAt = "2026-01-01T01:00:00+01:00", "2026-01-03T00:00:00Z", "not a time"
	if raw := encodeCold(ptr(sampleCold())); raw[0]&(0xf<<2) != 0xf<<2 {
		t.Fatalf("canonical times not stored as µs: flags %#x", raw[0])
	}
	if raw := encodeCold(&odd); raw[0]&(0xf<<2) != coldTimeBit<<1 {
		t.Fatalf("only updated_at is canonical: flags %#x", raw[0])
	}
	for name, c := range map[string]cold{"full": sampleCold(), "empty": empty, "odd times": odd} {
		raw, h := coldPair(&c)
		v, err := parseCold(raw, &h)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := v.cold(); !reflect.DeepEqual(got, c) {
			t.Fatalf("%s: got %+v\nwant %+v", name, got, c)
		}
		if string(v.bytes(cProject)) != c.Project || string(v.bytes(cSupersededBy)) != c.SupersededBy {
			t.Fatalf("%s: views", name)
		}
	}
}

func TestColdRecordRejectsMalformed(t *testing.T) {
	c := sampleCold()
	raw, h := coldPair(&c)
	cases := map[string][]byte{
		"empty":            nil,
		"short":            raw[:coldFixed-1],
		"truncated":        raw[:len(raw)-1],
		"trailing":         append(append([]byte(nil), raw...), 0),
		"long length":      append(append([]byte(nil), raw[:coldFixed]...), 0xff, 0x7f),
		"bad varint":       append(append([]byte(nil), raw[:coldFixed]...), 0x80),
		"cut after a time": raw[:coldFixed+8],
		"short time":       raw[:coldFixed+7],
	}
	for name, b := range cases {
		if _, err := parseCold(b, &h); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzParseCold(f *testing.F) {
	c := sampleCold()
	raw, h := coldPair(&c)
	f.Add(raw)
	f.Add(encodeCold(&cold{}))
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := parseCold(raw, &h)
		if err != nil {
			return
		}
		// Whatever parses re-encodes to the same bytes (one encoding per
		// record) once varints are canonical.
		back := v.cold()
		if again, err := parseCold(encodeCold(&back), &h); err != nil || !reflect.DeepEqual(again.cold(), back) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// An index folded by a binary of another layout (a read-only open does not
// refold it) is refused by every query, not misread.
func TestStaleLayoutIsRefused(t *testing.T) {
	fx := newFixture(t)
	fx.capture(mem{project: "proj", summary: "alpha"})
	if v := fx.kv.Get(keyLayout); len(v) != 4 || v[3] != Version {
		t.Fatalf("layout key %x", v)
	}
	for name, layout := range map[string][]byte{"version 1 (no layout key)": nil, "another version": {0, 0, 0, Version + 1}} {
		kv := newMemKV()
		for k, v := range fx.kv.m {
			kv.m[k] = v
		}
		delete(kv.m, string(keyLayout))
		if layout != nil {
			kv.m[string(keyLayout)] = layout
		}
		_, rerr := Recall(context.Background(), kv, fx.bodies, "alpha", Filter{}, now)
		_, berr := Brief(context.Background(), kv, fx.bodies, BriefQuery{Scope: me}, now)
		eerr := Each(kv, fx.bodies, func(memory.Record, State) error { return nil })
		_, _, _, lerr := Lookup(kv, fx.bodies, "mem_00001")
		for _, err := range []error{rerr, berr, eerr, lerr} {
			if !errors.Is(err, ErrStaleIndex) {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	// An index that never folded a capture is empty, not stale.
	if _, err := Brief(context.Background(), newMemKV(), fx.bodies, BriefQuery{Scope: me}, now); err != nil {
		t.Fatal(err)
	}
}
