package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events/memory"
)

func captureArgs(summary string, edits ...string) []string {
	args := []string{"capture", summary, "--event-type", "lesson", "--ring", "scar", "--project", "demo",
		"--agent-profile", "claude-code", "--workflow-id", "wf-1", "--session-id", "s-1",
		"--operation-id", "auto-3f2a9c1e-1", "--source-ref", "agent-checkpoint:3f2a9c1e"}
	for i := 0; i+1 < len(edits); i += 2 {
		j := slices.Index(args, edits[i])
		if edits[i+1] == "" {
			args = slices.Delete(args, j, j+2)
			continue
		}
		args[j+1] = edits[i+1]
	}
	return args
}

func TestCaptureStrictPath(t *testing.T) {
	c := newMemCLI(t)
	r := decodeRecord(t, c.ok(append([]string{"--json"}, captureArgs("Run migrations before seeding")...)...))
	if r.Scope != "agent" || r.Sensitivity != "normal" || r.Source.Type != "agent" || r.Source.Ref != "agent-checkpoint:3f2a9c1e" ||
		!slices.Equal(r.Tags, []string{"automatic-capture"}) || memory.Deref(r.OperationID) != "auto-3f2a9c1e-1" {
		t.Fatalf("%+v", r)
	}
	n := len(c.events())
	// Retrying the same candidate does not duplicate it.
	if id := strings.TrimSpace(c.ok(captureArgs("Run migrations before seeding")...)); id != r.ID {
		t.Fatalf("retry gave %s", id)
	}
	if len(c.events()) != n {
		t.Fatal("retry appended")
	}
	for _, flag := range []string{"--event-type", "--project", "--agent-profile", "--workflow-id", "--session-id", "--operation-id", "--source-ref"} {
		c.fails("capture requires "+flag, captureArgs("x", flag, "")...)
	}
	c.fails("unknown flag --scope", append(captureArgs("x"), "--scope", "global")...)
	c.fails("only the cambium, scar or seed ring", captureArgs("x", "--ring", "heartwood")...)
	c.fails("only event types preference", captureArgs("x", "--event-type", "note")...)
	c.fails("only normal sensitivity", captureArgs("my medication schedule")...)
	c.fails("never a transcript", captureArgs("User: hi\nAssistant: hello")...)
	c.fails("never a transcript", captureArgs(strings.Repeat("x", 2001))...)
	c.fails("at most three candidates", captureArgs("x", "--operation-id", "auto-3f2a9c1e-4")...)
	c.fails("of the same checkpoint", captureArgs("x", "--operation-id", "auto-other-1")...)
	c.fails("agent-checkpoint:<checkpoint id>", captureArgs("x", "--source-ref", "docs/x.md")...)
	if len(c.events()) != n {
		t.Fatal("a refused capture appended")
	}
	// A captured note is private to its agent profile.
	c.ok(captureArgs("Second candidate", "--operation-id", "auto-3f2a9c1e-2")...)
	if out := c.ok("recall", "candidate", "--agent-profile", "codex"); out != "" {
		t.Fatalf("another agent recalled: %q", out)
	}
	if out := c.ok("recall", "candidate", "--agent-profile", "claude-code"); !strings.Contains(out, "[scar] Second candidate score=") {
		t.Fatalf("recall: %q", out)
	}
}
