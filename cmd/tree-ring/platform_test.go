package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A command this system cannot honour refuses with one line naming what is
// missing, exit code ExitError, before it reads or writes anything; its help still
// prints. (On Windows the table names init and activate; here it is
// stood in for.)
func TestPlatformRefusal(t *testing.T) {
	old := unsupported
	t.Cleanup(func() { unsupported = old })
	unsupported = map[string]string{"init": "the hooks' shell lines cannot run here"}
	dir := t.TempDir()
	r := runCLI(t, "", "--root", filepath.Join(dir, ".tree-ring"), "init")
	want := "init is not supported on " + runtime.GOOS + ": the hooks' shell lines cannot run here (docs/platforms.md)"
	if r.code != exitError || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("%+v, want one line with %q", r, want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused init wrote %v", entries)
	}
	if r := runCLI(t, "", "init", "--help"); r.code != 0 || !strings.Contains(r.stdout, "init") {
		t.Fatalf("help: %+v", r)
	}
	if r := runCLI(t, "", "version"); r.code != 0 {
		t.Fatalf("version refused: %+v", r)
	}
}
