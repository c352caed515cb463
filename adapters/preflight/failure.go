package preflight

import (
	"context"
	"errors"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

// RecordsFailure reports whether a preflight that passed the contract
// check on disk and then failed with err moves its harness to failed: a
// failure of the ledger, recall, rendering, the receipt file, the output
// or the commit. The refusals that are not failures record nothing: an
// ineligible state, a manifest that differs from the ledger (status
// reports those as they are), a cancellation (the run is aborted).
func RecordsFailure(err error) bool {
	return err != nil && !errors.Is(err, ErrNotEligible) && !errors.Is(err, ErrLedgerMismatch) &&
		!errors.Is(err, context.Canceled)
}

// Failure plans the preflight.failed of harness's failed preflight, with
// diagnostic code (a bounded code from the error table, never error text,
// a path or content), from its state at now (l.StateAt). The caller
// appends it with the failed run, in one commit. ok is false when the
// state does not move to failed (needs-user-review stands).
func Failure(l Ledger, harness, code string, now time.Time, f *events.Factory) (a Append, ok bool, err error) {
	cur, err := l.StateAt(harness, now)
	if err != nil {
		return Append{}, false, err
	}
	to, err := fsm.Decide(cur, fsm.Fail)
	if err != nil {
		return Append{}, false, nil
	}
	if err := events.ValidDiagnostic(code); err != nil {
		code = "error"
	}
	stream := events.HarnessStream(harness)
	e, err := f.New(stream, events.TypePreflightFailed, &events.PreflightFailed{
		Transition: events.Transition{From: string(cur), To: string(to)}, HarnessID: harness, Reason: code,
	})
	if err != nil {
		return Append{}, false, err
	}
	return Append{Stream: stream, Events: []events.Envelope{e}}, true, nil
}
