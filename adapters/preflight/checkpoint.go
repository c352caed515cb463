package preflight

import (
	"fmt"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events"
)

// CheckpointRun is what the checkpoint decision reads of one run record.
type CheckpointRun struct{ Command, Status string }

// CheckpointIssued reports whether a session's checkpoint runs (the run
// records of its checkpoint scope, newest first) already hold an issued
// capture checkpoint: a succeeded `integrations hook` run. For a harness
// with CheckpointOncePerSession the hook then answers the stop with {}
// instead of a second block, whatever stop_hook_active says. A failed or
// interrupted run issued nothing the host saw, so it does not count.
func CheckpointIssued(recs []CheckpointRun) bool {
	for _, r := range recs {
		if r.Command == events.RunCmdIntegrationsHook && r.Status == events.RunStatusSucceeded {
			return true
		}
	}
	return false
}

// StopAnswer is the answer to a stop event whose contract passed: {} on a re-run
// (stop_hook_active), and for a harness that checkpoints once per session
// (a's CheckpointOncePerSession, whose stop cannot be trusted to say it is
// re-running) when due says the session's checkpoint was issued; else the
// capture checkpoint decision, whose lines file under id (CaptureIdentity),
// with a fresh checkpoint id. project is the canonical project root.
func StopAnswer(in HookInput, a *adapters.Adapter, project string, id Identity, due func() (bool, error), newCheckpointID func() (string, error)) ([]byte, error) {
	if in.StopHookActive {
		return StopDone, nil
	}
	if a.CheckpointOncePerSession {
		ok, err := due()
		if err != nil {
			return nil, err
		}
		if !ok {
			return StopDone, nil
		}
	}
	checkpoint, err := newCheckpointID()
	if err != nil {
		return nil, fmt.Errorf("mint checkpoint id: %w", err)
	}
	_, alias := ProjectName(project)
	return StopOutput(CheckpointReason(checkpoint, alias, project, id)), nil
}

// CheckpointLedger is the write transaction a once-per-session checkpoint
// is decided in.
type CheckpointLedger interface {
	// CheckpointRuns is the session's checkpoint runs, newest first.
	CheckpointRuns() ([]CheckpointRun, error)
	// RecordCheckpoint records this stop's checkpoint run, succeeded.
	RecordCheckpoint() error
}

// CheckpointDue reports whether this stop issues the session's capture
// checkpoint, and then records its run in l first: a host that never
// shows the block to the agent costs that session its checkpoint, never a
// loop.
func CheckpointDue(l CheckpointLedger) (bool, error) {
	runs, err := l.CheckpointRuns()
	if err != nil || CheckpointIssued(runs) {
		return false, err
	}
	return true, l.RecordCheckpoint()
}
