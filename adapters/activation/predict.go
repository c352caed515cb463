package activation

import "github.com/tree-ring/tree-ring/fsm"

// Predict is the state status will give o's harness once its plan is
// applied, for a dry run (init --dry-run) that publishes nothing: a plan
// ending in configured-awaiting-proof meets the host's live decisions
// (its trust, its hooks switch) exactly as Assess meets them (onHost);
// any other outcome is the plan's own. live is asked only Trust and
// HooksOff (nothing is proven yet: no receipt is looked for).
func Predict(o *Outcome, live Live) Status {
	if o.State != fsm.ConfiguredAwaitingProof {
		return Status{State: o.State, Next: o.NextStep}
	}
	return Status{}.onHost(Evidence{Adapter: o.Adapter, LedgerState: o.State}, live, "")
}
