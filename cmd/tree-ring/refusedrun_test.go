package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events"
)

// ledgerSplit counts c's events outside the run streams and the failed
// run.finished records, with their diagnostics.
func (c *memCLI) ledgerSplit() (domain int, failed []string) {
	c.t.Helper()
	for _, e := range c.events() {
		if !strings.HasPrefix(e.Stream, events.RunPrefix) {
			domain++
			continue
		}
		if e.Type != events.TypeRunFinished {
			continue
		}
		var f struct {
			Status     string `json:"status"`
			Diagnostic string `json:"diagnostic"`
		}
		if err := json.Unmarshal(e.Payload, &f); err != nil {
			c.t.Fatal(err)
		}
		if f.Status == "failed" {
			failed = append(failed, f.Diagnostic)
		}
	}
	return domain, failed
}

// Issue 24 finding 5: a memory import of a bad file imports nothing and is
// a recorded failed run (seed 003), holding no line of the file; a dry run
// records nothing.
func TestRefusedImportIsARecordedRun(t *testing.T) {
	c := newMemCLI(t)
	c.ok("remember", "harmless", "--event-type", "note", "--project", "p")
	domain, failed := c.ledgerSplit()
	const canary = "CANARY-refused-import-4c1d"
	bad := `{"id":"mem_x","summary":"` + canary + `","event_type":"e","colour":"red"}` + "\n"
	if r := c.run(bad, "import", "--dry-run", "-"); r.code != 2 {
		t.Fatalf("dry run: %+v", r)
	}
	if d, f := c.ledgerSplit(); d != domain || len(f) != len(failed) {
		t.Fatal("a refused dry run wrote")
	}
	if r := c.run(bad, "import", "-"); r.code != 2 || !strings.Contains(r.stderr, `unknown key "colour"`) {
		t.Fatalf("import: %+v", r)
	}
	d, f := c.ledgerSplit()
	if d != domain || len(f) != len(failed)+1 {
		t.Fatalf("refused import: %d domain events (want %d), failed runs %v", d, domain, f)
	}
	if hits := grepRoot(t, c.root, canary); len(hits) != 0 {
		t.Fatalf("the refused line reached %v", hits)
	}
}

// Issue 24 finding 5: a hook that fails before its session scope exists
// (stdin that is not JSON, a session id that cannot name a scope) is a
// recorded failed run of the harness, holding only the input's digest; in
// a checkout without a ledger it writes nothing.
func TestHookSetupFailureIsARecordedRun(t *testing.T) {
	p := newProj(t, ".claude")
	hook := func(stdin string) (int, string) {
		cmd := exec.Command(p.bin, "--root", p.path(".tree-ring"), "integrations", "hook", "--harness", "claude-code", "--input-json-stdin")
		cmd.Dir, cmd.Env = p.dir, []string{"HOME=" + p.home, "PATH=/usr/bin:/bin"}
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		return 0, string(out)
	}
	p.write(".tree-ring/placeholder", "") // a .tree-ring without a ledger
	if code, _ := hook("not json " + adoptCanary); code == 0 || p.exists(".tree-ring/ledger.db") {
		t.Fatalf("a checkout without a ledger: exit %d", code)
	}
	if err := os.Remove(p.path(".tree-ring/placeholder")); err != nil {
		t.Fatal(err)
	}
	p.ok("init")
	before := len(p.runEvents())
	if code, out := hook("not json " + adoptCanary); code == 0 || strings.Contains(out, adoptCanary) {
		t.Fatalf("bad stdin: exit %d %s", code, out)
	}
	runs := p.runEvents()[before:]
	if want := []string{"run.started integrations hook", "run.finished failed"}; !slices.Equal(runs, want) {
		t.Fatalf("runs %v, want %v", runs, want)
	}
	if strings.Contains(p.ok("events"), adoptCanary) {
		t.Fatal("the hook's input reached the ledger")
	}
}
