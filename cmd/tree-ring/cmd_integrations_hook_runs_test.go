package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestHookRunsAreScopedBySession: each start hook is a recorded run in its
// harness session's scope; two sessions of one project each see only their
// own runs, and the session id never reaches the ledger or the listing.
func TestHookRunsAreScopedBySession(t *testing.T) {
	const canary = "SESSION-CANARY-5c1d"
	p := newHP(t, ".claude")
	p.init()
	sessions := []string{canary + "-a", canary + "-b"}
	for i, s := range sessions {
		for range i + 1 { // session a starts once, session b twice
			in := p.payload("claude-code", "session-start.json", func(m map[string]any) { m["session_id"] = s })
			if r := p.hook("claude-code", in); r.code != 0 {
				t.Fatal(r.stderr)
			}
		}
	}
	root := filepath.Join(p.dir, ".tree-ring")
	for i, s := range sessions {
		r := p.raw("", "--root", root, "--json", "runs", "--harness", "claude-code", "--session-id", s)
		if r.code != 0 {
			t.Fatal(r.stderr)
		}
		var out struct {
			Runs []struct {
				Command, Status, Harness string
				Telemetry                struct {
					QueryClass  string `json:"query_class"`
					ResultCount *int   `json:"result_count"`
					ReceiptID   string `json:"receipt_id"`
				}
			}
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatal(err)
		}
		if len(out.Runs) != i+1 {
			t.Fatalf("session %d sees %d runs, want %d: %s", i, len(out.Runs), i+1, r.stdout)
		}
		for _, run := range out.Runs {
			tel := run.Telemetry
			if run.Command != "integrations hook" || run.Status != "succeeded" || run.Harness != "claude-code" ||
				tel.QueryClass != "startup_fallback" || tel.ResultCount == nil || !strings.HasPrefix(tel.ReceiptID, "receipt-") {
				t.Errorf("run %+v", run)
			}
		}
		if strings.Contains(r.stdout, canary) {
			t.Errorf("runs output shows the session id: %s", r.stdout)
		}
	}
	// Run records hold the session's scope key, never its id (receipts
	// carry the normalized session identity, as the protocol publishes).
	for _, typ := range []string{"run.started", "run.finished"} {
		if ev := p.ok("", "--root", root, "events", "--type", typ); strings.Contains(ev, canary) || !strings.Contains(ev, typ) {
			t.Errorf("%s records: %s", typ, ev)
		}
	}
	// Not the files under the root: receipts carry the session identity.
	if !t.Failed() {
		t.Logf("canary: hook runs: %d runs listings and 2 run event listings searched, 0 hits", len(sessions))
	}
}
