package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
)

// TestForgetDeleteErasesTheText checks every byte of the ledger file: the
// text of a deleted memory must not survive anywhere, including on the
// free pages bbolt's copy-on-write leaves behind.
func TestForgetDeleteErasesTheText(t *testing.T) {
	c := newMemCLI(t)
	const canary = "zebra-canary-7f3e unique phrasing about the kestrel deploy"
	for i := 0; i < 30; i++ {
		c.ok("remember", fmt.Sprintf("filler memory %d about builds", i), "--event-type", "note", "--project", "p")
	}
	id := strings.TrimSpace(c.ok("remember", canary, "--event-type", "note", "--project", "p", "--tag", "kestrel-tag-42", "--source-ref", "docs/kestrel-ref-99.md"))
	// More writes after it: each copies pages that hold the text.
	for i := 0; i < 30; i++ {
		c.ok("remember", fmt.Sprintf("later memory %d", i), "--event-type", "note", "--project", "p")
	}
	ledger := filepath.Join(c.root, bolt.LedgerFile)
	if len(grepRoot(t, c.root, "zebra-canary-7f3e")) == 0 {
		t.Fatal("setup: the text should be in the ledger before forget")
	}
	if out := c.ok("--json", "forget", id, "--reason", "user asked"); out != `{"ok":true,"memory_id":"`+id+`"}`+"\n" {
		t.Fatalf("forget output %q", out)
	}
	needles := []string{"zebra-canary-7f3e", "kestrel deploy", "kestrel-tag-42", "kestrel-ref-99", "user asked"}
	for _, needle := range needles {
		if hits := grepRoot(t, c.root, needle); len(hits) != 0 {
			t.Fatalf("%q survives in %v (ledger %s)", needle, hits, ledger)
		}
	}
	files, all := treeScan(t, c.root)
	t.Logf("canary: forget delete: %d needles over %d files (%d bytes, free pages included) under the root, 0 hits",
		len(needles), files, len(all))
	c.verify()
	c.ok("projections", "rebuild")
	c.verify()
	if out := c.ok("recall", "kestrel"); out != "" {
		t.Fatalf("recalled after delete: %q", out)
	}
	c.fails("memory "+id+" was already deleted", "forget", id, "--reason", "again")
	c.fails("memory mem_nope not found", "forget", "mem_nope", "--reason", "x")
	c.fails("forget needs a non-blank --reason", "forget", id)
	c.fails("--mode must be delete or redact", "forget", id, "--reason", "x", "--mode", "shred")
	// The forget event holds the reason's digest only (the rebuild's run
	// records come after it).
	var last events.Envelope
	for _, e := range c.events() {
		if strings.HasPrefix(e.Stream, events.MemoryPrefix) {
			last = e
		}
	}
	if last.Type != "memory.forgotten" || strings.Contains(string(last.Payload), "user asked") {
		t.Fatalf("forget event %s", last.Payload)
	}
}

func TestForgetRedactLeavesATombstone(t *testing.T) {
	c := newMemCLI(t)
	id := strings.TrimSpace(c.ok("remember", "redact-canary-91 lives here", "--event-type", "note", "--project", "p",
		"--scope", "agent", "--agent-profile", "a", "--operation-id", "op-9"))
	if out := c.ok("forget", id, "--mode", "redact", "--reason", "mistake"); out != "Tree Ring Memory forget complete: "+id+"\n" {
		t.Fatalf("%q", out)
	}
	if hits := grepRoot(t, c.root, "redact-canary-91"); len(hits) != 0 {
		t.Fatalf("text survives in %v", hits)
	}
	if out := c.ok("recall", "redact", "--include-sensitive"); out != "" {
		t.Fatalf("recalled a tombstone: %q", out)
	}
	// Hidden from a default export; with --include-sensitive it is the
	// published redacted row.
	if out := c.ok("export"); strings.Contains(out, id) {
		t.Fatal("tombstone in a default export")
	}
	out := c.ok("export", "--include-sensitive")
	line := out[strings.Index(out, "\n")+1:]
	r := decodeRecord(t, strings.TrimSpace(line)[len(`{"type":"memory_event","memory":`):len(strings.TrimSpace(line))-1])
	if r.ID != id || r.Summary != "[REDACTED]" || r.EventType != "redacted" || r.Scope != "manual" || r.Sensitivity != "private" ||
		r.Project != nil || r.AgentProfile != nil || r.OperationID != nil || r.Source.Type != "manual" || r.UpdatedAt == r.CreatedAt {
		t.Fatalf("redacted row %+v", r)
	}
	c.fails("is already redacted", "forget", id, "--mode", "redact", "--reason", "x")
	c.ok("forget", id, "--reason", "now delete it")
	c.verify()
}
