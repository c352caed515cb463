package preflight

import (
	"testing"

	"github.com/tree-ring/tree-ring/events"
)

func TestCheckpointIssued(t *testing.T) {
	hook := func(status string) CheckpointRun {
		return CheckpointRun{Command: events.RunCmdIntegrationsHook, Status: status}
	}
	cases := []struct {
		name string
		recs []CheckpointRun
		want bool
	}{
		{"no run yet", nil, false},
		{"an issued checkpoint", []CheckpointRun{hook(events.RunStatusSucceeded)}, true},
		{"only a failed attempt", []CheckpointRun{hook(events.RunStatusFailed), hook(events.RunStatusInterrupted)}, false},
		{"still running", []CheckpointRun{hook(events.RunStatusRunning)}, false},
		{"issued before a failure", []CheckpointRun{hook(events.RunStatusFailed), hook(events.RunStatusSucceeded)}, true},
		{"another command's run", []CheckpointRun{{Command: events.RunCmdCapture, Status: events.RunStatusSucceeded}}, false},
	}
	for _, c := range cases {
		if got := CheckpointIssued(c.recs); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
