package acceptance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClaudeCodeAddedAfterInit: Claude Code's marker appears after init
// (a project initialized for Codex). init stays create-only and exits 5
// naming `integrations reconcile`; reconcile --apply publishes the bridge
// and replaces activation.json; then a real Claude Code session runs the
// bridge and status is active with its receipt.
func TestClaudeCodeAddedAfterInit(t *testing.T) {
	requireAcceptance(t)
	c := claudeCode
	s := step{t, c.String()}
	claude := install(t, c)
	p := newProject(t, s, ".codex")
	if err := os.MkdirAll(filepath.Join(p.dir, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, errs, code := p.run(p.dir, time.Minute, p.env(), "", p.bin, "init")
	if code != 5 || !strings.Contains(out, "tree-ring integrations reconcile --harness claude-code") || strings.Contains(out, "move it aside") {
		s.fatalf("init after adding .claude", "exit %d: %s%s", code, out, errs)
	}
	if st := p.state("claude-code"); st != "needs-user-review" {
		s.fatalf("review before reconcile", "claude-code is %s", st)
	}
	p.tr("reconcile", "integrations", "reconcile", "--harness", "claude-code", "--apply")
	if st := p.state("claude-code"); st != "configured-awaiting-proof" {
		s.fatalf("reconciled", "claude-code is %s", st)
	}
	m := NewMock(func(*Request) Reply { return Reply{Text: mainDone} })
	defer m.Close()
	out, errs, code = p.run(p.dir, 3*time.Minute, claudeEnv(p, m), "", claude, "-p", "Review accproj and report.", "--output-format", "json")
	if code != 0 {
		s.fatalf("headless run", "exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if !anyRequest(m.Requests(), func(r *Request) bool { return r.Contains(p.memory) }) {
		s.fatalf("brief in the model request", "no request holds the remembered %q", p.memory)
	}
	if st := p.state("claude-code"); st != "active" {
		s.fatalf("status active", "claude-code is %s", st)
	}
	p.tr("audit verify", "audit", "verify")
}
