package projections

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/events/memory"
)

// bodyMap is a bodies bucket.
type bodyMap map[string][]byte

func (b bodyMap) Body(d string) []byte { return b[d] }

func TestDuplicatesFold(t *testing.T) {
	f := eventstest.Factory("cli")
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	bodies := bodyMap{}
	n := 0
	capture := func(id, scope, agent, summary string) events.Envelope {
		rec := memory.NewRecord(id, summary, "lesson", now)
		rec.Project, rec.Scope, rec.AgentProfile = memory.Str("demo"), scope, memory.Str(agent)
		n++
		w := memory.NewWrite(&rec, events.OriginRemember, func() string { return string(rune('a' + n)) })
		bodies[w.Captured.BodySHA256] = w.Body
		return f.Must(events.MemoryStream(id), events.TypeMemoryCaptured, &w.Captured)
	}
	key := memory.DuplicateKey("demo", "agent", "coder", "", "", "run make first")
	evs := []events.Envelope{
		capture("mem_20261101_120000_000000000001", "agent", "coder", "Run make first"),
		capture("mem_20261101_120000_000000000002", "agent", "coder", "run  MAKE first"),
		capture("mem_20261101_120000_000000000003", "agent", "codex", "Run make first"),
		capture("mem_20261101_120000_000000000004", "agent", "coder", "Run make first"),
		f.Must(events.MemoryStream("mem_20261101_120000_000000000002"), events.TypeMemorySuperseded,
			&events.MemorySuperseded{MemoryID: "mem_20261101_120000_000000000002", SupersededBy: "mem_20261101_120000_000000000003"}),
		f.Must(events.MemoryStream("mem_20261101_120000_000000000004"), events.TypeMemoryForgotten,
			&events.MemoryForgotten{MemoryID: "mem_20261101_120000_000000000004", Mode: events.ForgetDelete, ReasonSHA256: strings.Repeat("0", 64), ReasonChars: 1}),
	}
	kv := NewMemKV()
	p := duplicatesProjection{}
	steps := []string{
		"mem_20261101_120000_000000000001",
		"mem_20261101_120000_000000000001,mem_20261101_120000_000000000002",
		"mem_20261101_120000_000000000001,mem_20261101_120000_000000000002",
		"mem_20261101_120000_000000000001,mem_20261101_120000_000000000002,mem_20261101_120000_000000000004",
		"mem_20261101_120000_000000000001,mem_20261101_120000_000000000004",
		"mem_20261101_120000_000000000001",
	}
	for i := range evs {
		if !p.Handles(evs[i].Type) {
			t.Fatalf("does not handle %s", evs[i].Type)
		}
		if err := p.Apply(kv, bodies, &evs[i]); err != nil {
			t.Fatal(err)
		}
		ids, err := SameSummary(kv, key)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(ids, ","); got != steps[i] {
			t.Fatalf("after event %d: %s, want %s", i, got, steps[i])
		}
	}
	// A re-fold that no longer has the deleted memory's body ends in the
	// same bytes, and a second capture of an id changes nothing.
	for d, b := range bodies {
		if m, _ := memory.UnmarshalBody(b); m.MemoryID == "mem_20261101_120000_000000000004" {
			delete(bodies, d)
		}
	}
	again := NewMemKV()
	for _, e := range append(evs, evs[0]) {
		if err := p.Apply(again, bodies, &e); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(kv.Keys(), again.Keys()) {
		t.Fatalf("re-fold differs:\n%q\n%q", kv.Keys(), again.Keys())
	}
}
