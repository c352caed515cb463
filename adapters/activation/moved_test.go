package activation_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/activation"
	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/fsm"
)

// At a moved root the status rule says needs-user-review with the step
// naming reconcile, whatever the ledger's state and a receipt say, and
// asks nothing live but the program (a foreign program comes first).
func TestAssessMovedRoot(t *testing.T) {
	claude := lookup(t, "claude-code")
	for _, st := range []fsm.State{fsm.Active, fsm.ConfiguredAwaitingProof, fsm.NeedsTrust} {
		live := fakeLive{found: activation.Found{Receipt: &receipt.Receipt{State: string(fsm.Active)}}}
		s := activation.Assess(activation.Evidence{Adapter: claude, Ledger: true, Manifest: activation.ManifestMoved, Events: true, LedgerState: st}, &live)
		if s.State != fsm.NeedsUserReview || s.Next != activation.NextMoved || strings.Join(live.asked, " ") != "program" {
			t.Errorf("ledger %s: %s %q, asked %v", st, s.State, s.Next, live.asked)
		}
	}
	if !strings.Contains(activation.NextMoved, "`tree-ring integrations reconcile --apply`") {
		t.Fatal(activation.NextMoved)
	}
}

// The moved-root rule: a store initialized at another root than the one
// it is opened at; never before store.initialized.
func TestRootMoved(t *testing.T) {
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	for _, tc := range []struct {
		l    activation.Ledger
		fp   string
		want bool
	}{
		{activation.Ledger{Initialized: true, ProjectRootFingerprint: a}, b, true},
		{activation.Ledger{Initialized: true, ProjectRootFingerprint: a}, a, false},
		{activation.Ledger{ProjectRootFingerprint: a}, b, false},
		{activation.Ledger{Initialized: true, ProjectRootFingerprint: a}, "", false},
	} {
		if got := activation.RootMoved(tc.l, tc.fp); got != tc.want {
			t.Errorf("%+v at %.8s: %v", tc.l, tc.fp, got)
		}
	}
	var re interface{ NeedsUserReview() }
	if err := error(&activation.RootMovedError{}); !errors.As(err, &re) || strings.Count(err.Error(), "\n") != 0 || !strings.Contains(err.Error(), "reconcile --apply") {
		t.Fatalf("refusal: %v", err)
	}
}

// A dry run predicts what status says after the plan: an outcome awaiting
// proof meets the host's trust and hooks switch as Assess does; any other
// outcome is the plan's.
func TestPredict(t *testing.T) {
	codex, claude := lookup(t, "codex"), lookup(t, "claude-code")
	denied := adapters.Trust{Next: "trust it"}
	live := fakeLive{trust: &denied}
	if s := activation.Predict(&activation.Outcome{Adapter: codex, State: fsm.ConfiguredAwaitingProof}, &live); s.State != fsm.NeedsTrust || s.Next != "trust it" {
		t.Errorf("untrusted codex: %+v", s)
	}
	live = fakeLive{}
	if s := activation.Predict(&activation.Outcome{Adapter: codex, State: fsm.ConfiguredAwaitingProof}, &live); s.State != fsm.ConfiguredAwaitingProof || strings.Contains(strings.Join(live.asked, " "), "receipt") {
		t.Errorf("trusted codex: %+v, asked %v", s, live.asked)
	}
	live = fakeLive{}
	o := &activation.Outcome{Adapter: claude, State: fsm.NeedsUserReview, NextStep: "review"}
	if s := activation.Predict(o, &live); s.State != fsm.NeedsUserReview || s.Next != "review" || len(live.asked) != 0 {
		t.Errorf("a review: %+v, asked %v", s, live.asked)
	}
}
