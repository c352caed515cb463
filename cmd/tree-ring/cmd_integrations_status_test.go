package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Status never writes: every byte of every file (the ledger included) is
// unchanged after status, verbose, JSON, with or without receipts; and a
// project without a store gets none.
func TestStatusIsReadOnly(t *testing.T) {
	p := newHP(t, ".claude", ".codex")
	os.RemoveAll(filepath.Join(p.dir, ".tree-ring"))
	before := hashTree(t, p.dir)
	r := p.run("", "integrations", "status", "--verbose")
	if r.code != 0 || !strings.Contains(r.stdout, "Claude Code: unsupported\n  next: Run `tree-ring init`") {
		t.Fatalf("no store: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(p.dir, ".tree-ring")); err == nil || !mapsEqual(before, hashTree(t, p.dir)) {
		t.Fatal("status created something")
	}
	p = newHP(t, ".claude", ".codex")
	p.init()
	p.hook("claude-code", p.payload("claude-code", "session-start.json", nil))
	before = hashTree(t, p.dir)
	for _, args := range [][]string{{"integrations", "status"}, {"integrations", "status", "--verbose"}, {"--json", "integrations", "status"}} {
		if r := p.run("", args...); r.code != 0 {
			t.Fatal(r.stderr)
		}
		if after := hashTree(t, p.dir); !mapsEqual(before, after) {
			t.Fatalf("%v changed files", args)
		}
	}
}

// A tampered hook file is needs-user-review although a valid receipt
// exists; restoring it restores active.
func TestStatusTamperedBridge(t *testing.T) {
	p := newHP(t, ".codex")
	p.init()
	if r := p.hook("codex", p.payload("codex", "session-start.json", nil)); r.code != 0 {
		t.Fatal(r.stderr)
	}
	hooks := filepath.Join(p.dir, ".codex", "hooks.json")
	orig, _ := os.ReadFile(hooks)
	os.WriteFile(hooks, []byte(strings.Replace(string(orig), "timeout\": 10", "timeout\": 600", 1)), 0o644)
	st := p.status()["codex"]
	if st["state"] != "needs-user-review" || !strings.Contains(st["next_step"].(string), ".codex/hooks.json") || st["last_recall_result_count"] != nil {
		t.Fatalf("tampered: %v", st)
	}
	os.WriteFile(hooks, orig, 0o644)
	if s := p.state("codex"); s != "active" {
		t.Fatalf("restored: %s", s)
	}
}

// A receipt whose store_id was edited no longer proves anything; neither
// does one whose file was deleted. The newest valid receipt wins.
func TestStatusEditedReceipt(t *testing.T) {
	p := newHP(t, ".claude")
	p.init()
	in := p.payload("claude-code", "session-start.json", nil)
	for i := 0; i < 2; i++ {
		if r := p.hook("claude-code", in); r.code != 0 {
			t.Fatal(r.stderr)
		}
	}
	rs := p.receipts()
	edit := func(rel string) {
		path := filepath.Join(p.dir, rel)
		b, _ := os.ReadFile(path)
		var m map[string]any
		json.Unmarshal(b, &m)
		m["store_id"] = "11111111-2222-4333-8444-555555555555"
		out, _ := json.MarshalIndent(m, "", "  ")
		os.WriteFile(path, append(out, '\n'), 0o600)
	}
	newest := rs[0]
	if p.receipt(rs[1]).RecordedAt > p.receipt(rs[0]).RecordedAt {
		newest = rs[1]
	}
	older := rs[0]
	if older == newest {
		older = rs[1]
	}
	edit(newest)
	st := p.status()["claude-code"]
	if st["state"] != "active" || st["receipt_age_seconds"] == nil {
		t.Fatalf("the older valid receipt should prove: %v", st)
	}
	edit(older)
	if s := p.state("claude-code"); s != "configured-awaiting-proof" {
		t.Fatalf("edited store_id: %s", s)
	}
	if r := p.hook("claude-code", in); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if s := p.state("claude-code"); s != "active" {
		t.Fatalf("a new proof: %s", s)
	}
}
