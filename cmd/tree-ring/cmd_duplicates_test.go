package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/memory"
)

// countTypes counts the ledger's events by type.
func (c *memCLI) countTypes() map[string]int {
	c.t.Helper()
	n := map[string]int{}
	for _, e := range c.events() {
		n[e.Type]++
	}
	return n
}

func TestRememberDuplicate(t *testing.T) {
	c := newMemCLI(t)
	args := func(summary string, extra ...string) []string {
		return append([]string{"remember", summary, "--event-type", "decision", "--project", "demo"}, extra...)
	}
	first := strings.TrimSpace(c.ok(args("Use pnpm, not npm")...))
	before := c.countTypes()
	r := c.run("", args("  use PNPM,   not npm ")...)
	if r.code != 0 || strings.TrimSpace(r.stdout) != first ||
		r.stderr != "tree-ring: "+first+" already holds this summary in the same scope; nothing written (--allow-duplicate stores another)\n" {
		t.Fatalf("%+v", r)
	}
	if got := c.countTypes(); got[events.TypeMemoryCaptured] != before[events.TypeMemoryCaptured] || len(c.events()) != sumCounts(before) {
		t.Fatalf("a duplicate remember appended: %v -> %v", before, got)
	}
	// --json prints the existing memory and no note.
	r = c.run("", append([]string{"--json"}, args("USE PNPM, NOT NPM")...)...)
	if r.code != 0 || r.stderr != "" || decodeRecord(t, r.stdout).ID != first {
		t.Fatalf("%+v", r)
	}
	// Another scope is another memory; so is --allow-duplicate.
	other := strings.TrimSpace(c.ok(args("Use pnpm, not npm", "--scope", "project")...))
	forced := strings.TrimSpace(c.ok(args("Use pnpm, not npm", "--allow-duplicate")...))
	if other == first || forced == first || other == forced {
		t.Fatalf("ids %s %s %s", first, other, forced)
	}
	// Superseding by the same words is deliberate: written.
	repl := strings.TrimSpace(c.ok(args("Use pnpm, not npm", "--supersedes", forced)...))
	if repl == forced || repl == first {
		t.Fatalf("supersede gave %s", repl)
	}
	// Forgotten memories no longer hold their words; superseded ones never
	// did. A deleted memory's duplicate key (a digest of its words) leaves
	// the ledger file with its body.
	key := memory.DuplicateKey("demo", "global", "", "", "", "Use pnpm, not npm")
	stored := key[:8] // the duplicate index keeps the digest's first 8 bytes
	if !fileContains(t, filepath.Join(c.root, "ledger.db"), stored) {
		t.Fatal("the duplicate key is not where this test looks for it")
	}
	c.ok("forget", first, "--mode", "delete", "--reason", "test")
	if r := c.run("", args("use pnpm, not npm")...); strings.TrimSpace(r.stdout) != repl {
		t.Fatalf("after deleting the first: %+v", r)
	}
	c.ok("forget", repl, "--mode", "redact", "--reason", "test")
	if fileContains(t, filepath.Join(c.root, "ledger.db"), stored) {
		t.Fatal("the duplicate key of forgotten memories is still in the ledger file")
	}
	if id := strings.TrimSpace(c.ok(args("Use pnpm, not npm")...)); id == first || id == repl || id == forced {
		t.Fatal("a forgotten or superseded memory was returned")
	}
	c.verify()
}

func fileContains(t *testing.T, path string, needle []byte) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(b, needle)
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func TestCaptureDuplicateAcrossCheckpoints(t *testing.T) {
	c := newMemCLI(t)
	first := strings.TrimSpace(c.ok(captureArgs("Run migrations before seeding")...))
	before := c.countTypes()
	// The next turn's checkpoint offers the same lesson.
	r := c.run("", captureArgs("run migrations  before seeding", "--operation-id", "auto-77aa-1", "--source-ref", "agent-checkpoint:77aa")...)
	if r.code != 0 || strings.TrimSpace(r.stdout) != first || !strings.Contains(r.stderr, "nothing written") {
		t.Fatalf("%+v", r)
	}
	after := c.countTypes()
	if after[events.TypeMemoryCaptured] != before[events.TypeMemoryCaptured] {
		t.Fatal("a duplicate capture appended memory.captured")
	}
	// The capture run is still recorded, with no item: the audit sees the
	// candidate and that it added nothing.
	if after[events.TypeRunStarted] != before[events.TypeRunStarted]+1 || after[events.TypeRunFinished] != before[events.TypeRunFinished]+1 {
		t.Fatalf("runs: %v -> %v", before, after)
	}
	evs := c.events()
	var fin events.RunFinished
	if e := evs[len(evs)-1]; e.Type != events.TypeRunFinished || json.Unmarshal(e.Payload, &fin) != nil ||
		fin.Status != events.RunStatusSucceeded || fin.Telemetry == nil || fin.Telemetry.Items == nil || *fin.Telemetry.Items != 0 {
		t.Fatalf("last event %s %s", e.Type, e.Payload)
	}
	// Another agent profile's capture is its own memory.
	if id := strings.TrimSpace(c.ok(captureArgs("Run migrations before seeding", "--agent-profile", "codex", "--operation-id", "auto-77aa-2", "--source-ref", "agent-checkpoint:77aa")...)); id == first {
		t.Fatal("deduplicated across agent profiles")
	}
	c.verify()
}

func TestAuditDuplicates(t *testing.T) {
	c := newMemCLI(t)
	if out := c.run("", "audit", "duplicates"); out.code == 0 {
		t.Fatalf("no ledger: %+v", out)
	}
	rem := func(summary string, extra ...string) string {
		return strings.TrimSpace(c.ok(append([]string{"remember", summary, "--event-type", "lesson", "--project", "demo"}, extra...)...))
	}
	a := rem("Flaky test: retry once")
	rem("Unrelated")
	if out := c.ok("audit", "duplicates"); out != "no duplicate memories\n" {
		t.Fatalf("%q", out)
	}
	b := rem("flaky test:  retry ONCE", "--allow-duplicate")
	x := rem("Unrelated", "--scope", "project")
	out := c.ok("audit", "duplicates")
	want := "scope global, project demo: keep " + a + ", repeated by " + b + "\n" +
		"1 duplicate memories in 1 groups (remove one with `tree-ring forget ID --mode delete --reason duplicate`)\n"
	if out != want {
		t.Fatalf("got %q\nwant %q (%s)", out, want, x)
	}
	var rep struct {
		Groups []struct {
			Scope     string   `json:"scope"`
			Keep      string   `json:"keep"`
			MemoryIDs []string `json:"memory_ids"`
		} `json:"groups"`
		Redundant int `json:"redundant"`
	}
	if err := json.Unmarshal([]byte(c.ok("--json", "audit", "duplicates")), &rep); err != nil || rep.Redundant != 1 ||
		len(rep.Groups) != 1 || rep.Groups[0].Keep != a || strings.Join(rep.Groups[0].MemoryIDs, ",") != a+","+b {
		t.Fatalf("%+v %v", rep, err)
	}
	if strings.Contains(out, "retry") {
		t.Fatal("the report printed memory text")
	}
	c.ok("forget", b, "--mode", "redact", "--reason", "dup")
	if out := c.ok("audit", "duplicates"); out != "no duplicate memories\n" {
		t.Fatalf("after redact: %q", out)
	}
}
