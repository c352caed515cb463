package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters/preflight"
)

// TestOpenCodePreflight: the plugin's request (the identity it sends, as
// captured from OpenCode 1.18.33) proves the harness; the receipt names
// the session and its agent; a prompt or any other key is refused.
func TestOpenCodePreflight(t *testing.T) {
	p := newHP(t, ".opencode")
	p.init()
	stdin, err := os.ReadFile(filepath.Join("..", "..", "testdata", "harness-payloads", "opencode", "preflight-stdin.json"))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"integrations", "preflight", "--harness", "opencode", "--input-json-stdin", "--context-format", "json"}
	if s := p.state("opencode"); s != "configured-awaiting-proof" {
		t.Fatalf("before the plugin ran: %s", s)
	}
	var out struct {
		Context string         `json:"context"`
		State   string         `json:"state"`
		Receipt map[string]any `json:"receipt"`
	}
	if err := json.Unmarshal([]byte(p.ok(string(stdin), args...)), &out); err != nil {
		t.Fatal(err)
	}
	if out.State != "active" || !strings.HasPrefix(out.Context, "Tree Ring Memory scoped preflight recall:") {
		t.Fatalf("output %+v", out)
	}
	rs := p.receipts()
	if len(rs) != 1 {
		t.Fatalf("receipts %v", rs)
	}
	const session = "ses_dcf38d6abffelIXUJpBDERZ5wJ"
	if rc := p.receipt(rs[0]); rc.HarnessID != "opencode" || rc.Session != (preflight.Identity{AgentProfile: "opencode:build", WorkflowID: session, SessionID: session}) {
		t.Fatalf("receipt %+v", rc)
	}
	if s := p.state("opencode"); s != "active" {
		t.Fatalf("after the plugin ran: %s", s)
	}
	const canary = "CANARY-opencode-prompt-7d2e"
	for name, body := range map[string]string{
		"a prompt as task hint": strings.Replace(string(stdin), `}`, `,"task_hint":"`+canary+`"}`, 1),
		"a store id":            strings.Replace(string(stdin), `}`, `,"store_id":"`+canary+`"}`, 1),
		"no session":            `{"agent_profile":"opencode:build","workflow_id":"w"}`,
	} {
		r := p.run(body, args...)
		if r.code != 2 || r.stdout != "" || strings.Contains(r.stderr, canary) {
			t.Errorf("%s: %d %q %q", name, r.code, r.stdout, r.stderr)
		}
	}
	if len(p.receipts()) != 1 {
		t.Fatal("a refused request left a receipt")
	}
	p.ok("", "audit", "verify")
}

// TestOpenCodePluginCreateOnly: a plugin file of the user's at the bridge
// path is never replaced; activation stops at review.
func TestOpenCodePluginCreateOnly(t *testing.T) {
	p := newProj(t, ".opencode")
	p.write(".opencode/plugins/tree-ring-memory.ts", "export const Mine = async () => ({});\n")
	p.review("init")
	var r activateOut
	p.reviewJSON(&r, "integrations", "activate", "--harness", "opencode")
	if r.State != "needs-user-review" || !strings.Contains(r.NextStep, ".opencode/plugins/tree-ring-memory.ts already exists with other content") {
		t.Fatalf("review: %+v", r)
	}
	if p.read(".opencode/plugins/tree-ring-memory.ts") != "export const Mine = async () => ({});\n" {
		t.Fatal("the user's plugin was changed")
	}
}
