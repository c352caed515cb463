package preflight

import (
	"errors"
	"time"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

// DriftOf reports whether a preflight failed because the bridge changed
// under it: its files or blocks, or the adapter its record names. reason
// and paths are what bridge.drift_detected records (project-relative
// paths, never content). A changed program is not drift: the harness
// moves to failed with the program's diagnostic (its repair is init or a
// chmod, not a review).
func DriftOf(cause error) (reason string, paths []string, ok bool) {
	var bc *BridgeChangedError
	switch {
	case errors.As(cause, &bc):
		return adapters.ReasonBridgeFileChanged, bc.Paths, true
	case errors.Is(cause, ErrStale):
		return adapters.ReasonAdapterChanged, nil, true
	}
	return "", nil, false
}

// FailureOf plans the harness event of a preflight that failed with
// cause (diagnostic code): bridge.drift_detected (-> needs-user-review)
// when the bridge or adapter changed (DriftOf), otherwise
// preflight.failed (Failure) when RecordsFailure; a manifest without the
// harness's record moves nothing (status reports the manifest). The caller appends it
// with the failed run in one commit, so the timeline moves at the instant
// the hook found the change. ok is false when nothing moves.
func FailureOf(l Ledger, harness string, cause error, code string, now time.Time, f *events.Factory) (a Append, ok bool, err error) {
	reason, paths, drift := DriftOf(cause)
	if !drift {
		if !RecordsFailure(cause) || errors.Is(cause, ErrNoRecord) {
			return Append{}, false, nil
		}
		return Failure(l, harness, code, now, f)
	}
	cur, err := l.StateAt(harness, now)
	if err != nil {
		return Append{}, false, err
	}
	to, err := fsm.Decide(cur, fsm.Drift)
	if err != nil || cur == to {
		return Append{}, false, nil // unsupported, or already awaiting review
	}
	if paths == nil {
		paths = []string{}
	}
	stream := events.HarnessStream(harness)
	e, err := f.New(stream, events.TypeBridgeDriftDetected, &events.BridgeDriftDetected{
		Transition: events.Transition{From: string(cur), To: string(to)}, HarnessID: harness, Paths: paths, Reason: reason,
	})
	if err != nil {
		return Append{}, false, err
	}
	return Append{Stream: stream, Events: []events.Envelope{e}}, true, nil
}
