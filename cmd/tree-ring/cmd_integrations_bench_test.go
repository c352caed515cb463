package main

import (
	"os"
	"path/filepath"
	"testing"
)

// benchProject initializes a project with codex, claude-code and pi markers
// in-process and returns a runner bound to it.
func benchProject(b *testing.B) func(args ...string) {
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range []string{".codex", ".claude", ".pi"} {
		if err := os.Mkdir(filepath.Join(dir, m), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	d := testDeps()
	run := func(args ...string) {
		if r := (invocation{deps: d}).run(append([]string{"--root", filepath.Join(dir, ".tree-ring"), "--source-root", dir}, args...)...); r.code != 0 {
			b.Fatalf("%v: %d %s", args, r.code, r.stderr)
		}
	}
	run("init")
	return run
}

// BenchmarkActivateUnchanged: activate on an unchanged project (read-only
// ledger open, detection, plan against disk, no write).
func BenchmarkActivateUnchanged(b *testing.B) {
	run := benchProject(b)
	for b.Loop() {
		run("integrations", "activate", "--harness", "claude-code")
	}
}

// BenchmarkInitUnchanged: init re-run over four harnesses, nothing to do.
func BenchmarkInitUnchanged(b *testing.B) {
	run := benchProject(b)
	for b.Loop() {
		run("init")
	}
}
