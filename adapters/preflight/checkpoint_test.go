package preflight

import (
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
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

// fakeCheckpoints is a CheckpointLedger of plain values.
type fakeCheckpoints struct {
	runs     []CheckpointRun
	recorded int
}

func (f *fakeCheckpoints) CheckpointRuns() ([]CheckpointRun, error) { return f.runs, nil }
func (f *fakeCheckpoints) RecordCheckpoint() error                  { f.recorded++; return nil }

func TestCheckpointDue(t *testing.T) {
	f := &fakeCheckpoints{}
	if due, err := CheckpointDue(f); err != nil || !due || f.recorded != 1 {
		t.Fatalf("first stop: due %v err %v recorded %d, want due and one run recorded", due, err, f.recorded)
	}
	f.runs = []CheckpointRun{{Command: events.RunCmdIntegrationsHook, Status: events.RunStatusSucceeded}}
	if due, err := CheckpointDue(f); err != nil || due || f.recorded != 1 {
		t.Fatalf("after the checkpoint: due %v err %v recorded %d, want not due and nothing recorded", due, err, f.recorded)
	}
}

func TestStopAnswer(t *testing.T) {
	once, every := lookupAdapter(t, true), lookupAdapter(t, false)
	id := Identity{AgentProfile: "a", WorkflowID: "w", SessionID: "s"}
	mint := func() (string, error) { return "01234567-89ab-4def-8123-456789abcdef", nil }
	due := func(v bool) func() (bool, error) { return func() (bool, error) { return v, nil } }
	block := StopOutput(CheckpointReason("01234567-89ab-4def-8123-456789abcdef", "my-project", "/work/my-project", id))
	for _, c := range []struct {
		name string
		in   HookInput
		a    *adapters.Adapter
		due  bool
		want []byte
	}{
		{"re-run", HookInput{StopHookActive: true}, every, true, StopDone},
		{"first stop", HookInput{}, every, false, block},
		{"once per session, due", HookInput{}, once, true, block},
		{"once per session, issued", HookInput{}, once, false, StopDone},
	} {
		got, err := StopAnswer(c.in, c.a, "/work/my-project", id, due(c.due), mint)
		if err != nil || string(got) != string(c.want) {
			t.Errorf("%s: %q %v, want %q", c.name, got, err, c.want)
		}
	}
}

// lookupAdapter is a registered adapter whose CheckpointOncePerSession is
// once.
func lookupAdapter(t *testing.T, once bool) *adapters.Adapter {
	t.Helper()
	for _, a := range adapters.All() {
		if a.CheckpointOncePerSession == once && a.Publishes() {
			return a
		}
	}
	t.Fatalf("no adapter with CheckpointOncePerSession %v", once)
	return nil
}
