package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/fsm"
)

// Issue 24 finding 5: a SessionStart hook that finds its bridge edited
// fails (exit 1, the diagnostic on stderr, no receipt) and records, in one
// commit, its failed run and the harness's drift, so `audit replay --at`
// an instant after the hook says needs-user-review, not active.
func TestHookRecordsBridgeDrift(t *testing.T) {
	p := newHP(t, ".claude")
	p.init()
	in := p.payload("claude-code", "session-start.json", nil)
	if r := p.hook("claude-code", in); r.code != 0 {
		t.Fatal(r.stderr)
	}
	before := p.receipts()
	skill := filepath.Join(p.dir, ".claude", "skills", "tree-ring-memory", "SKILL.md")
	b, err := os.ReadFile(skill)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(skill, append(b, "\nedited\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	typesBefore := p.eventTypes()
	r := p.hook("claude-code", in)
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "installed bridge differs") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("drifted hook: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	after := p.now
	if !slices.Equal(p.receipts(), before) {
		t.Fatalf("a drifted bridge wrote a receipt: %v", p.receipts())
	}
	got := p.eventTypes()[len(typesBefore):]
	if !slices.Equal(got, []string{"run.started", "run.finished", "bridge.drift_detected"}) {
		t.Fatalf("the drifted hook recorded %v", got)
	}
	runs := p.runsOf("claude-code", "abc123")
	if len(runs) != 2 || runs[0].Status != "failed" || runs[0].Diagnostic != "bridge_changed" || runs[0].Command != "integrations hook" {
		t.Fatalf("runs %+v", runs)
	}
	if s := p.state("claude-code"); s != string(fsm.NeedsUserReview) {
		t.Errorf("status says %s", s)
	}
	rr := p.run("", "--json", "audit", "replay", "--harness", "claude-code", "--at", after.Format(time.RFC3339))
	if rr.code != 0 {
		t.Fatal(rr.stderr)
	}
	if out := decodeReplayJSON(t, rr.stdout); len(out.Harnesses) != 1 || out.Harnesses[0].State != fsm.NeedsUserReview {
		t.Fatalf("replay at the drift: %+v", out)
	}
	// A second hook on the same drift records its failed run and no
	// second transition.
	if r := p.hook("claude-code", in); r.code != 1 {
		t.Fatalf("exit %d", r.code)
	}
	if got := p.eventTypes()[len(typesBefore)+3:]; !slices.Equal(got, []string{"run.started", "run.finished"}) {
		t.Fatalf("the repeat recorded %v", got)
	}
	p.ok("", "audit", "verify")
}

// A hook refused before its run began (no record for the harness in the
// manifest) still leaves a failed run in the ledger; a manifest that
// names another root (a copy) is never written.
func TestHookRefusalBeforeTheRunIsRecorded(t *testing.T) {
	p := newHP(t, ".claude", ".codex")
	p.init()
	in := p.payload("claude-code", "session-start.json", nil)
	if r := p.hook("claude-code", in); r.code != 0 {
		t.Fatal(r.stderr)
	}
	m := p.manifestOf()
	delete(m.Harnesses, "claude-code")
	writeManifest(t, p, m)
	n := len(p.eventTypes())
	if r := p.hook("claude-code", in); r.code != 1 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got := p.eventTypes()[n:]; !slices.Equal(got, []string{"run.started", "run.finished"}) {
		t.Fatalf("the refused hook recorded %v", got)
	}
	m.ProjectRootFingerprint = strings.Repeat("0", 64)
	writeManifest(t, p, m)
	n = len(p.eventTypes())
	if r := p.hook("claude-code", in); r.code != 1 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got := p.eventTypes()[n:]; len(got) != 0 {
		t.Fatalf("a manifest of another root recorded %v", got)
	}
}

func writeManifest(t *testing.T, p *hp, m adapters.Manifest) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(p.dir, adapters.ManifestPath), m.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
}
