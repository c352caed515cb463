package preflight

import "github.com/tree-ring/tree-ring/events"

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
