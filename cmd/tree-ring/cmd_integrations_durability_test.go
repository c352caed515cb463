package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
)

// TestDurabilityFailureRollsNothingBack injects a directory fsync failure
// while codex's bridge is published: the command fails, nothing is rolled
// back, the manifest is not published, and every harness changed in the run
// is recorded needs-user-review. A retry without the failure reconciles.
func TestDurabilityFailureRollsNothingBack(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{".codex", ".claude"} {
		if err := os.Mkdir(filepath.Join(dir, m), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	failing := true
	d := testDeps() // one id source across invocations of the same store
	d.OpenProjectRoot = func(p string) (*adapters.ProjectRoot, error) {
		r, err := adapters.OpenProjectRoot(p)
		if r != nil {
			r.FailSync = func(d string) error {
				if failing && d == ".codex" {
					return errors.New("injected I/O error")
				}
				return nil
			}
		}
		return r, err
	}
	run := func(args ...string) result {
		return invocation{deps: d}.run(append([]string{"--root", filepath.Join(dir, ".tree-ring"), "--source-root", dir}, args...)...)
	}
	r := run("init")
	if r.code != exitIndeterminate || r.stdout != "" || !strings.Contains(r.stderr, "durability is indeterminate") || strings.Contains(r.stderr, dir) {
		t.Fatalf("init: %+v", r)
	}
	for _, p := range []string{".codex/hooks.json", ".agents/skills/tree-ring-memory/SKILL.md", ".claude/settings.json", ".tree-ring/activation/agent-zero.json"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s was rolled back: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".tree-ring/activation.json")); err == nil {
		t.Fatal("manifest published after an indeterminate publication")
	}
	states := map[string]string{}
	reasons := map[string]string{}
	out := run("events")
	for _, line := range strings.Split(strings.TrimSpace(out.stdout), "\n") {
		var e struct {
			Stream  string
			Type    string
			Payload struct{ To, Reason string }
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if id, ok := strings.CutPrefix(e.Stream, "harness/"); ok {
			states[id] = e.Payload.To
			if e.Type == "publication.review_required" {
				reasons[id] = e.Payload.Reason
			}
		}
		if e.Type == "manifest.published" {
			t.Fatal("manifest.published recorded")
		}
	}
	for _, id := range []string{"agent-zero", "claude-code", "codex"} {
		if states[id] != "needs-user-review" || reasons[id] != adapters.ReasonDurability {
			t.Errorf("%s: state %s reason %s", id, states[id], reasons[id])
		}
	}
	failing = false
	r = run("--json", "init")
	var rep initOut
	if err := json.Unmarshal([]byte(r.stdout), &rep); r.code != 0 || err != nil {
		t.Fatalf("retry: %+v %v", r, err)
	}
	// (No HOME: status cannot read Codex's trust settings, and init prints
	// the state status gives.)
	want := map[string]string{"agent-zero": "needs-plugin", "claude-code": "configured-awaiting-proof", "codex": "failed"}
	if !maps(rep.states(), want) {
		t.Fatalf("retry states %v", rep.states())
	}
	if _, err := os.Stat(filepath.Join(dir, ".tree-ring/activation.json")); err != nil {
		t.Fatal("manifest not published on retry")
	}
	if v := run("audit", "verify"); v.code != 0 {
		t.Fatalf("verify: %+v", v)
	}
}
