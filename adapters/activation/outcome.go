package activation

import (
	"strings"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/fsm"
)

// Indeterminate is always true: part of a harness's files, or all of them
// with a failed sync, are on disk, so the command changed the project but
// not as planned (the command layer maps it to its exit code for unknown
// outcomes; the next init or activate reviews and completes it).
func (e *DurabilityFailure) Indeterminate() bool { return true }

// ReviewError reports that a command left harnesses in needs-user-review:
// it wrote nothing for them, and only the user can make the next move (each
// one's next step says which). The command did the rest of its work and
// printed its report; cmd maps the error to an exit code of its own, so
// that a script can tell (docs/exit-codes.md).
type ReviewError struct {
	Harnesses []ReviewedHarness // in plan order
}

// ReviewedHarness is one harness a ReviewError names, with the paths its
// review is about (project-relative, never content).
type ReviewedHarness struct {
	ID    string
	Paths []string
	// Reconcile is true when the review is the manifest's record alone
	// (adapters.ReasonManifest): init and activate never rewrite
	// activation.json, reconcile --apply does, recorded.
	Reconcile bool
}

func (e *ReviewError) Error() string {
	var b strings.Builder
	for i, h := range e.Harnesses {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(h.ID)
		if len(h.Paths) > 0 {
			b.WriteString(" (" + strings.Join(h.Paths, ", ") + ")")
		}
	}
	verb, them := "needs", "it"
	if len(e.Harnesses) > 1 {
		verb, them = "need", "them"
	}
	msg := b.String() + " " + verb + " user review: Tree Ring changed nothing for " + them +
		"; follow the next step above, then run the command it names"
	for _, h := range e.Harnesses {
		if h.Reconcile {
			msg += " (for " + h.ID + ": `tree-ring integrations reconcile --harness " + h.ID + " --apply`)"
		}
	}
	return msg
}

// NeedsUserReview marks the error for cmd's error table (exit 5).
func (e *ReviewError) NeedsUserReview() {}

// NeedsReview is a *ReviewError naming every outcome that ends in
// needs-user-review, nil when none does.
func NeedsReview(outcomes []*Outcome) error {
	var hs []ReviewedHarness
	for _, o := range outcomes {
		if o.State == fsm.NeedsUserReview {
			hs = append(hs, ReviewedHarness{ID: o.Adapter.ID, Paths: o.Paths, Reconcile: o.Reason == adapters.ReasonManifest})
		}
	}
	if hs == nil {
		return nil
	}
	return &ReviewError{Harnesses: hs}
}
