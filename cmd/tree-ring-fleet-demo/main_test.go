package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestDemo(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tree-ring")
	if out, err := exec.Command("go", "build", "-o", dir+"/", "../tree-ring", "../tree-ring-fleet").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	keep := filepath.Join(t.TempDir(), "demo")
	var out strings.Builder
	if err := run(&out, bin, keep); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"fleet verified: 3 replicas, ",
		"Published project-1 again: nothing new",
		"replica stopped at position 3",
		"`fleet verify` now exits 3 naming the store and the position:",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Count(out.String(), " active ") != 3 {
		t.Errorf("want claude-code active in each of the three projects:\n%s", out.String())
	}
}
