package events_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
)

// chain seals envs as positions 1.. of one ledger.
func chain(t *testing.T, envs ...events.Envelope) []events.Envelope {
	t.Helper()
	prev := events.GenesisHash
	for i := range envs {
		envs[i].Version, envs[i].Position = 1, uint64(i+1)
		envs[i].Seal(prev)
		prev = envs[i].Hash
	}
	return envs
}

func TestCheckOwnImport(t *testing.T) {
	const own, other = "0b7e4f5a-1c2d-4e3f-8a9b-0c1d2e3f4a5b", "9d8c7b6a-5f4e-4d3c-ab2a-1f0e9d8c7b6a"
	f := &events.Factory{Now: eventstest.Clock(eventstest.Epoch, time.Second), NewID: eventstest.IDs(0), Actor: "cli"}
	initialized := func(id string) events.Envelope {
		return f.Must(events.StoreStream, events.TypeStoreInitialized, &events.StoreInitialized{StoreID: id, Format: 1, ProjectRootFingerprint: "fp", CLIVersion: "0.15.13"})
	}
	detected := func(h string) events.Envelope {
		return f.Must(events.HarnessStream(h), events.TypeHarnessDetected, &events.HarnessDetected{
			Transition: events.Transition{From: "unsupported", To: "configured-awaiting-proof"}, HarnessID: h, Capability: "lifecycle-hook", AdapterVersion: "1"})
	}
	mine := chain(t, initialized(own), detected("codex"), detected("claude-code"), detected("pi"))
	theirs := chain(t, initialized(other), detected("codex"))
	present := func(n, of int) []bool { // the first n of `of` envelopes present
		p := make([]bool, of)
		for i := range n {
			p[i] = true
		}
		return p
	}
	cases := []struct {
		name      string
		head      int // this ledger holds mine[:head]
		local     int // then this many events of its own that no export holds
		envs      []events.Envelope
		present   []bool
		wantIndex int // -1: admitted
		wantStore string
	}{
		{"its own export again", 4, 0, mine, present(4, 4), -1, ""},
		{"part of its own export", 4, 0, mine[1:3], present(2, 2), -1, ""},
		{"a newer export onto an older copy", 2, 0, mine, present(2, 4), -1, ""},
		{"only the newer part", 2, 0, mine[2:], present(0, 2), -1, ""},
		{"another store's export", 4, 0, theirs, present(0, 2), 0, other},
		{"another store's events without its store.initialized", 4, 0, theirs[1:], present(0, 1), 0, ""},
		{"a gap in its own chain", 1, 0, append([]events.Envelope{mine[0]}, mine[2:]...), present(1, 3), 1, ""},
		{"its own events out of order", 2, 0, []events.Envelope{mine[3], mine[2]}, present(0, 2), 0, ""},
		{"a retry after a failed attempt recorded its run", 2, 2, mine, present(2, 4), -1, ""},
		{"only the newer part after local events", 2, 1, mine[2:], present(0, 2), 0, ""},
		{"another store's export after local events", 2, 1, theirs, present(0, 2), 0, other},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			head, hash := uint64(c.head), mine[c.head-1].Hash
			if c.local > 0 { // the ledger went on with events of its own
				head, hash = head+uint64(c.local), "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0"
			}
			err := events.CheckOwnImport(own, head, hash, c.envs, c.present)
			var fe *events.ForeignStoreError
			switch {
			case c.wantIndex < 0 && err != nil:
				t.Fatalf("refused: %v", err)
			case c.wantIndex < 0:
			case !errors.As(err, &fe) || fe.Index != c.wantIndex || fe.StoreID != c.wantStore || fe.Own != own:
				t.Fatalf("got %v (%+v), want a refusal at %d naming store %q", err, fe, c.wantIndex, c.wantStore)
			}
		})
	}
}
