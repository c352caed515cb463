package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/tree-ring/tree-ring/events/receipt"
)

// captureFlag reads a flag's value from the first capture line of a stop
// checkpoint's reason (quoted or not).
func captureFlag(t *testing.T, reason, flag string) string {
	t.Helper()
	for _, line := range strings.Split(reason, "\n") {
		if !strings.Contains(line, " capture ") || !strings.Contains(line, "--project") {
			continue
		}
		m := regexp.MustCompile(`--` + flag + ` "?([^"\s]+)"?`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("no --%s in %q", flag, line)
		}
		return m[1]
	}
	t.Fatalf("no capture line in %q", reason)
	return ""
}

// A lesson a subagent captures at SubagentStop is filed under the parent
// session's agent profile: the next session recalls it, a new subagent
// (a new worker) still does not, and the subagent is named by its session.
func TestSubagentLessonsRecurInTheParentProfile(t *testing.T) {
	p := newHP(t, ".claude")
	p.init()
	start := p.payload("claude-code", "subagent-start.json", func(m map[string]any) { m["agent_id"] = "def456" })
	if r := p.hook("claude-code", start); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := p.hook("claude-code", p.payload("claude-code", "subagent-stop.json", nil))
	reason, _ := oneObject(t, r.stdout)["reason"].(string)
	if r.code != 0 || reason == "" {
		t.Fatalf("%d %s", r.code, r.stderr)
	}
	args := []string{"--json", "capture", "Explore: the fixtures live under testdata/harness-payloads", "--event-type", "lesson", "--ring", "cambium"}
	for _, f := range []string{"project", "agent-profile", "workflow-id", "session-id", "operation-id", "source-ref"} {
		args = append(args, "--"+f, captureFlag(t, reason, f))
	}
	rec := decodeRecord(t, p.ok("", args...))
	if memory.Deref(rec.AgentProfile) != "claude-code" || memory.Deref(rec.WorkflowID) != "abc123" || memory.Deref(rec.SessionID) != "def456" {
		t.Fatalf("filed under %+v", rec)
	}
	// The next session of the parent profile recalls it.
	next := p.payload("claude-code", "session-start.json", func(m map[string]any) { m["session_id"] = "xyz789" })
	if ctx := contextOf(t, p.hook("claude-code", next)); !strings.Contains(ctx, "the fixtures live under testdata") {
		t.Fatalf("the next session did not recall the subagent's lesson:\n%s", ctx)
	}
	// A new subagent is a new worker: worker profiles remain private.
	spawn := p.payload("claude-code", "subagent-start.json", func(m map[string]any) { m["agent_id"] = "ghi012" })
	if ctx := contextOf(t, p.hook("claude-code", spawn)); strings.Contains(ctx, "the fixtures live under testdata") {
		t.Fatalf("a new worker inherited agent-scoped notes:\n%s", ctx)
	}
	p.ok("", "audit", "verify")
}

// Each spawn has its own receipt directory; retention removes it once its
// receipts have expired and gone.
func TestRetentionRemovesSpentSpawnDirectories(t *testing.T) {
	p := newHP(t, ".claude")
	p.init()
	dirs := func() []string {
		var out []string
		base := filepath.Join(p.dir, receipt.Dir, "claude-code")
		ents, _ := os.ReadDir(base)
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	for _, id := range []string{"spawn-1", "spawn-2", "spawn-3"} {
		in := p.payload("claude-code", "subagent-start.json", func(m map[string]any) { m["agent_id"] = id })
		if r := p.hook("claude-code", in); r.code != 0 {
			t.Fatal(r.stderr)
		}
	}
	if n := len(dirs()); n != 3 {
		t.Fatalf("%d spawn directories", n)
	}
	p.now = p.now.Add(31 * 24 * time.Hour)
	if r := p.hook("claude-code", p.payload("claude-code", "session-start.json", nil)); r.code != 0 {
		t.Fatal(r.stderr)
	}
	want := filepath.Base(receipt.WorkerDir("claude-code", "claude-code"))
	if got := dirs(); len(got) != 1 || got[0] != want {
		t.Fatalf("directories after expiry: %v, want only the session's %s", got, want)
	}
	if rs := p.receipts(); len(rs) != 1 {
		t.Fatalf("receipts %v", rs)
	}
	p.ok("", "audit", "verify")
}
