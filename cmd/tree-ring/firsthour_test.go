package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters/preflight"
)

// inProject runs tree-ring as typed in the project's nested directory: no
// --root, no --source-root.
func (p *hp) inProject(args ...string) result {
	p.t.Helper()
	return invocation{deps: p.deps(), env: p.env, getwd: func() (string, error) { return p.cwd, nil }}.run(args...)
}

// Issue 26 item 1: a plain remember in a project stores the memory under
// the project's alias, and the next SessionStart brief shows it.
func TestPlainRememberReachesTheNextBrief(t *testing.T) {
	p := newHP(t, ".claude", ".git")
	p.init()
	r := p.inProject("--json", "remember", "Always run go vet before committing", "--event-type", "preference")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("remember: %+v", r)
	}
	_, alias := preflight.ProjectName(p.dir)
	if rec := decodeRecord(t, r.stdout); deref(rec.Project) != alias || !strings.HasPrefix(alias, "project-") {
		t.Fatalf("project %v, want the alias %q", rec.Project, alias)
	}
	h := p.hook("claude-code", p.payload("claude-code", "session-start.json", nil))
	if h.code != 0 || !strings.Contains(h.stdout, "Always run go vet before committing") {
		t.Fatalf("the brief does not show the memory: %+v", h)
	}
}

// Issue 26 item 1: capture defaults --project the same way; --project ""
// stores a project-less memory and says it reaches no brief.
func TestProjectDefaultForCaptureAndExplicitNone(t *testing.T) {
	p := newHP(t, ".claude", ".git")
	p.init()
	_, alias := preflight.ProjectName(p.dir)
	r := p.inProject("--json", "capture", "Run the linter before every push", "--event-type", "lesson",
		"--agent-profile", "a", "--workflow-id", "w", "--session-id", "s", "--operation-id", "auto-c-1", "--source-ref", "agent-checkpoint:c")
	if r.code != 0 || deref(decodeRecord(t, r.stdout).Project) != alias {
		t.Fatalf("capture: %+v", r)
	}
	r = p.inProject("--json", "remember", "A global note", "--event-type", "lesson", "--project", "")
	if r.code != 0 || decodeRecord(t, r.stdout).Project != nil ||
		r.stderr != "tree-ring: this memory names no project, so no project's session brief will show it (omit --project to store it for this project)\n" {
		t.Fatalf("remember --project \"\": %+v", r)
	}
}

// Issue 26 item 5: a write command in a project with no store refuses,
// names init and creates nothing; init still creates the store.
func TestNoStoreBeforeInit(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := invocation{deps: testDeps(), getwd: func() (string, error) { return dir, nil }}
	for _, args := range [][]string{
		{"remember", "--event-type", "lesson", "x"},
		{"capture", "x", "--event-type", "lesson", "--agent-profile", "a", "--workflow-id", "w", "--session-id", "s", "--operation-id", "auto-c-1", "--source-ref", "agent-checkpoint:c"},
		{"forget", "01JC0000000000000000000000", "--reason", "wrong"},
		{"projections", "rebuild"},
	} {
		r := in.run(args...)
		if r.code != 2 || r.stdout != "" || r.stderr != "tree-ring: no Tree Ring store in this project; nothing was created; run `tree-ring init` first\n" {
			t.Errorf("%v: %+v", args, r)
		}
		if _, err := os.Lstat(filepath.Join(dir, ".tree-ring")); err == nil {
			t.Fatalf("%v created .tree-ring", args)
		}
	}
	if r := in.run("init"); r.code != 0 {
		t.Fatalf("init: %+v", r)
	}
	if r := in.run("remember", "--event-type", "lesson", "x"); r.code != 0 {
		t.Fatalf("remember after init: %+v", r)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
