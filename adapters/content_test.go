package adapters

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHookCommandAbsentStore runs the exact published command line through
// sh -c, as Codex and Claude Code do, in a checkout without .tree-ring: it
// must exit 0 with no output and create nothing.
func TestHookCommandAbsentStore(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	for _, h := range []string{"codex", "claude-code"} {
		dir := t.TempDir()
		cmd := exec.Command("sh", "-c", HookCommand(h))
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
		cmd.Stdin = strings.NewReader(`{"session_id":"s","cwd":".","hook_event_name":"SessionStart"}`)
		out, err := cmd.CombinedOutput()
		if err != nil || len(out) != 0 {
			t.Fatalf("%s: err %v, output %q", h, err, out)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("%s: the hook created %v", h, entries)
		}
	}
}

// TestHookCommandPrefersLocalBinary: with .tree-ring present the command
// execs the project-local binary with the documented arguments.
func TestHookCommandPrefersLocalBinary(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, ".tree-ring", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	fake := "#!/bin/sh\necho \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "tree-ring"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", HookCommand("codex"))
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	want := "--root " + real + "/.tree-ring integrations hook --harness codex --input-json-stdin\n"
	if got := string(out); got != want && got != strings.Replace(want, real, dir, 1) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
