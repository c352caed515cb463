package acceptance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClaudeCodeMovedProject: a project proven by a real Claude Code
// session is moved (mv) to another directory. There, status is
// needs-user-review naming reconcile, and a real session before the
// reconcile proves nothing (its hook names reconcile and records no
// receipt); `integrations reconcile --apply` records the move and leaves
// Claude Code awaiting proof; only a new real session at the new root
// makes it active, with the brief in the model's request.
func TestClaudeCodeMovedProject(t *testing.T) {
	requireAcceptance(t)
	c := claudeCode
	s := step{t, c.String()}
	claude := install(t, c)
	p := newProject(t, s, ".claude")
	m := NewMock(func(*Request) Reply { return Reply{Text: mainDone} })
	defer m.Close()
	session := func(check string) {
		t.Helper()
		out, errs, code := p.run(p.dir, 3*time.Minute, claudeEnv(p, m), "", claude, "-p", "Review accproj and report.", "--output-format", "json")
		if code != 0 {
			s.fatalf(check, "exit %d\nstdout %s\nstderr %s", code, out, errs)
		}
	}
	session("session at the first root")
	if st := p.state("claude-code"); st != "active" {
		s.fatalf("active at the first root", "claude-code is %s", st)
	}
	// The same project name (the lifecycle alias) under another parent.
	moved := filepath.Join(filepath.Dir(p.dir), "moved", "accproj")
	if err := os.MkdirAll(filepath.Dir(moved), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p.dir, moved); err != nil {
		t.Fatal(err)
	}
	p.dir = moved
	if st := p.state("claude-code"); st != "needs-user-review" {
		s.fatalf("status at the new root", "claude-code is %s", st)
	}
	receipts := len(p.receipts("claude-code"))
	seen := len(m.Requests())
	session("session before reconcile")
	if st := p.state("claude-code"); st != "needs-user-review" || len(p.receipts("claude-code")) != receipts {
		s.fatalf("no proof before reconcile", "claude-code is %s with %d receipts (had %d)", st, len(p.receipts("claude-code")), receipts)
	}
	if anyRequest(m.Requests()[seen:], func(r *Request) bool { return r.Contains(p.memory) }) {
		s.fatalf("no brief before reconcile", "a request holds the remembered %q", p.memory)
	}
	out := p.tr("reconcile", "integrations", "reconcile", "--apply")
	if !strings.Contains(out, "project_root_fingerprint") {
		s.fatalf("reconcile", "the change does not show the new root: %s", out)
	}
	if st := p.state("claude-code"); st != "configured-awaiting-proof" {
		s.fatalf("reconciled", "claude-code is %s", st)
	}
	seen = len(m.Requests())
	session("session after reconcile")
	if !anyRequest(m.Requests()[seen:], func(r *Request) bool { return r.Contains(p.memory) }) {
		s.fatalf("brief in the model request", "no request holds the remembered %q", p.memory)
	}
	if st := p.state("claude-code"); st != "active" {
		s.fatalf("status active at the new root", "claude-code is %s", st)
	}
	p.tr("audit verify", "audit", "verify")
}
