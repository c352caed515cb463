package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/activation"
)

// Issue 24 finding 10: a copy of another checkout's .tree-ring (without
// its ledger) names another project root. Status says so with the step
// that then works, instead of "run init to adopt", which init refuses;
// after the step, init makes this project's store.
func TestCloneOfAnotherRootIsNamed(t *testing.T) {
	a := newProj(t, ".claude")
	a.ok("init")
	b := newProj(t, ".claude")
	if out, err := exec.Command("cp", "-a", a.path(".tree-ring"), b.dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	for _, f := range []string{".tree-ring/ledger.db", ".tree-ring/store.key"} {
		if err := os.Remove(b.path(f)); err != nil {
			t.Fatal(err)
		}
	}
	r := b.run("integrations", "status")
	want := (&activation.UnadoptableError{Condition: activation.ManifestMismatch}).Error()
	if r.code != exitError || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, b.dir) {
		t.Fatalf("status: %+v", r)
	}
	if r := b.run("init"); r.code != exitError || !strings.Contains(r.stderr, "names another project root") {
		t.Fatalf("init: %+v", r)
	}
	// The step, as written.
	move := "mv " + adapters.ManifestPath + " " + adapters.ManifestPath + ".review"
	if out, err := exec.Command("sh", "-c", "cd '"+b.dir+"' && "+move).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", move, err, out)
	}
	// The copied Agent Zero binding names the other root: review.
	b.review("init")
	if got := b.claudeState(); got != "configured-awaiting-proof" {
		t.Fatalf("after the step: %s", got)
	}
	if _, err := os.Stat(filepath.Join(b.dir, adapters.ManifestPath+".review")); err != nil {
		t.Fatal(err)
	}
}

// Issue 24 finding 10: after an init that made the store and then failed
// (here: a partial copy of a guidance file it refuses to keep), status
// says init did not finish and to run it again, not "activate"; once
// fixed, init finishes.
func TestStatusAfterFailedInit(t *testing.T) {
	p := newProj(t, ".claude")
	g := adapters.GuidanceFiles()[0]
	p.write(g.Path, string(g.Data[:len(g.Data)/2]))
	if r := p.run("init"); r.code == 0 {
		t.Fatalf("init kept a partial guidance file: %+v", r)
	}
	if !p.exists(".tree-ring/ledger.db") {
		t.Fatal("the failure under test is one after the store was made")
	}
	var st initOut
	p.json(&st, "--json", "integrations", "status")
	if st.states()["claude-code"] != "unsupported" || st.next("claude-code") != activation.NextInitUnfinished {
		t.Fatalf("status after the failed init: %+v", st)
	}
	if err := os.Remove(p.path(g.Path)); err != nil {
		t.Fatal(err)
	}
	p.ok("init")
	if got := p.claudeState(); got != "configured-awaiting-proof" {
		t.Fatalf("after init again: %s", got)
	}
}
