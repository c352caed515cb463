package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemo runs `tree-ring demo` as a user would: it exits 0, its last
// lines show claude-code active and a passing verification, and it leaves
// nothing behind unless --keep.
func TestDemo(t *testing.T) {
	bin := buildBinary(t)
	tmp := t.TempDir()
	cmd := exec.Command(bin, "demo")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if n := len(lines); n < 2 || lines[n-2] != "claude-code: active" || !strings.HasPrefix(lines[n-1], "verified: ") {
		t.Fatalf("last lines:\n%s", strings.Join(lines[max(0, len(lines)-5):], "\n"))
	}
	for _, want := range []string{"[1] Created a throwaway project", "recalls the captured lesson: true", "fake clock"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	left, _ := os.ReadDir(tmp)
	for _, e := range left {
		if strings.HasPrefix(e.Name(), "tree-ring-demo-") {
			t.Errorf("demo left %s behind", e.Name())
		}
	}

	keep := filepath.Join(t.TempDir(), "kept")
	if out, err := exec.Command(bin, "demo", "--keep", keep).CombinedOutput(); err != nil {
		t.Fatalf("demo --keep: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(keep, "demo project", ".tree-ring", "ledger.db")); err != nil {
		t.Fatalf("--keep did not keep the project: %v", err)
	}
	if out, err := exec.Command(bin, "--root", filepath.Join(keep, "demo project", ".tree-ring"), "audit", "verify").CombinedOutput(); err != nil {
		t.Fatalf("kept ledger: %v %s", err, out)
	}
}
