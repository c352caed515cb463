package preflight_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/fsm"
)

// Given the harness's state and a preflight's failure, FailureOf plans
// drift (to needs-user-review) for a changed bridge or adapter,
// preflight.failed for other failures, and nothing for the refusals that
// move no state.
func TestFailureOf(t *testing.T) {
	for _, c := range []struct {
		name  string
		state fsm.State
		cause error
		typ   string // "" = nothing planned
		to    fsm.State
		paths []string
	}{
		{"bridge changed", fsm.Active, &preflight.BridgeChangedError{Paths: []string{".claude/skills/tree-ring-memory/SKILL.md"}},
			events.TypeBridgeDriftDetected, fsm.NeedsUserReview, []string{".claude/skills/tree-ring-memory/SKILL.md"}},
		{"stale adapter", fsm.ConfiguredAwaitingProof, preflight.ErrStale, events.TypeBridgeDriftDetected, fsm.NeedsUserReview, []string{}},
		{"program changed", fsm.Active, &adapters.ProgramError{Code: adapters.ProgramDiffers}, events.TypePreflightFailed, fsm.Failed, nil},
		{"already in review", fsm.NeedsUserReview, &preflight.BridgeChangedError{}, "", "", nil},
		{"program unreadable", fsm.Active, &adapters.ProgramError{Code: adapters.ProgramUnreadable}, events.TypePreflightFailed, fsm.Failed, nil},
		{"ledger failure", fsm.Active, errors.New("disk"), events.TypePreflightFailed, fsm.Failed, nil},
		{"no record", fsm.Active, preflight.ErrNoRecord, "", "", nil},
		{"not eligible", fsm.NeedsTrust, preflight.ErrNotEligible, "", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, ok, err := preflight.FailureOf(&fakeLedger{state: c.state}, "claude-code", c.cause, "error", eventstest.Epoch, eventstest.Factory("claude-code"))
			if err != nil || ok != (c.typ != "") {
				t.Fatalf("ok %v err %v", ok, err)
			}
			if !ok {
				return
			}
			e := a.Events[0]
			if a.Stream != events.HarnessStream("claude-code") || len(a.Events) != 1 || e.Type != c.typ {
				t.Fatalf("planned %s %v", a.Stream, e.Type)
			}
			v, err := events.DecodePayload(&e)
			if err != nil {
				t.Fatal(err)
			}
			switch p := v.(type) {
			case *events.BridgeDriftDetected:
				if p.From != string(c.state) || p.To != string(c.to) || !slices.Equal(p.Paths, c.paths) {
					t.Errorf("drift %+v", p)
				}
			case *events.PreflightFailed:
				if p.To != string(c.to) {
					t.Errorf("failed %+v", p)
				}
			}
		})
	}
}
