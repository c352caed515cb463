package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/preflight"
)

// trustGemini writes Gemini CLI's user trust file in the test HOME.
func (p *hp) trustGemini(level string) {
	p.t.Helper()
	path := filepath.Join(p.home, ".gemini", "trustedFolders.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatal(err)
	}
	doc, _ := json.Marshal(map[string]string{p.dir: level})
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		p.t.Fatal(err)
	}
}

// TestGeminiHookEndToEnd drives Gemini CLI's installed command lines with
// the payloads Gemini CLI 0.61.0 sent: SessionStart delivers and proves,
// AfterAgent issues the capture checkpoint once per session although
// stop_hook_active comes back false, unhooked events are refused, the
// folder-trust file decides needs-trust, and nothing the host sends
// (prompt, response, transcript path, the API key in its environment)
// reaches .tree-ring or stderr.
func TestGeminiHookEndToEnd(t *testing.T) {
	p := newE2E(t, ".gemini")
	const canary = "CANARY-9c41-gemini-never-store-me"
	// Gemini hands every hook the user's API key in the environment.
	p.env["GEMINI_API_KEY"] = canary + "-env"
	var stderr strings.Builder
	mark := func(m map[string]any) {
		m["transcript_path"] = "/home/u/.gemini/tmp/" + canary + ".jsonl"
		if m["hook_event_name"] == "AfterAgent" {
			m["prompt"], m["prompt_response"] = "my prompt "+canary, "my answer "+canary
		}
	}
	fire := func(file string, edit func(map[string]any)) result {
		t.Helper()
		r := p.fire("gemini-cli", p.payload("gemini-cli", file, func(m map[string]any) {
			mark(m)
			if edit != nil {
				edit(m)
			}
		}))
		stderr.WriteString(r.stderr)
		return r
	}

	if s := p.statusOf("gemini-cli"); s["state"] != "needs-trust" || !strings.Contains(s["next_step"].(string), `"TRUST_FOLDER" to ~/.gemini/trustedFolders.json`) {
		t.Fatalf("untrusted: %v", s)
	}
	p.trustGemini("TRUST_FOLDER")
	if s := p.statusOf("gemini-cli"); s["state"] != "configured-awaiting-proof" {
		t.Fatalf("trusted, before a session: %v", s)
	}

	ctx := contextOf(t, fire("session-start.json", nil))
	if !strings.HasPrefix(ctx, "Tree Ring Memory scoped preflight recall:") {
		t.Fatalf("context %q", ctx)
	}
	s := p.statusOf("gemini-cli")
	if s["state"] != "active" || s["next_step"] != "No action required for the receipt-backed session." {
		t.Fatalf("after SessionStart: %v", s)
	}
	rs := p.receipts()
	if len(rs) != 1 {
		t.Fatalf("receipts %v", rs)
	}
	if rc := p.receipt(rs[0]); rc.HarnessID != "gemini-cli" || rc.Session != (preflight.Identity{AgentProfile: "gemini-cli",
		WorkflowID: "68fb6ac1-afd5-49d2-a237-17238e8fe87e", SessionID: "68fb6ac1-afd5-49d2-a237-17238e8fe87e"}) {
		t.Fatalf("receipt %+v", rc)
	}

	// The first AfterAgent blocks with the checkpoint; every later one of
	// the session (stop_hook_active false again after the capture tool
	// call, or true) lets the turn end.
	r := fire("after-agent.json", nil)
	out := oneObject(t, r.stdout)
	if r.code != 0 || out["decision"] != "block" || !strings.HasPrefix(out["reason"].(string), "Tree Ring automatic capture checkpoint ") ||
		!regexp.MustCompile(`--agent-profile "?gemini-cli"? `).MatchString(out["reason"].(string)) || len(out) != 2 {
		t.Fatalf("first AfterAgent: %d %s %s", r.code, r.stdout, r.stderr)
	}
	for _, f := range []string{"after-agent.json", "after-agent-active.json", "after-agent.json"} {
		if r := fire(f, nil); r.code != 0 || r.stdout != "{}\n" {
			t.Fatalf("%s after the checkpoint: %d %q %s", f, r.code, r.stdout, r.stderr)
		}
	}
	// Another session has its own checkpoint.
	other := func(m map[string]any) { m["session_id"] = "0b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d" }
	if r := fire("after-agent.json", other); r.code != 0 || !strings.Contains(r.stdout, `"decision":"block"`) {
		t.Fatalf("a second session's first AfterAgent: %q %s", r.stdout, r.stderr)
	}
	if r := fire("after-agent.json", other); r.stdout != "{}\n" {
		t.Fatalf("a second session's second AfterAgent: %q", r.stdout)
	}

	// Events Tree Ring does not register are refused, with nothing on
	// stdout and exit 1 (Gemini reads exit 2 as "deny": on AfterAgent, a
	// retry with the stderr as the prompt).
	for _, f := range []string{"before-agent-unhooked.json", "session-end-unhooked.json"} {
		r := p.exec(p.cwd, p.payload("gemini-cli", f, mark), "/bin/sh", "-c", p.command("gemini-cli", "SessionStart"))
		stderr.WriteString(r.stderr)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "hook_event_name is not one of SessionStart, AfterAgent") {
			t.Fatalf("%s: %d %q %s", f, r.code, r.stdout, r.stderr)
		}
	}
	for _, f := range []string{"session-start.json", "after-agent.json"} {
		if r := fire(f, func(m map[string]any) { m["store_id"] = canary }); r.code != 1 || r.stdout != "" {
			t.Fatalf("%s: a forbidden key: %d %q", f, r.code, r.stdout)
		}
	}

	// Distrust wins over the receipt: Gemini skips the hooks from now on.
	p.trustGemini("DO_NOT_TRUST")
	if s := p.statusOf("gemini-cli"); s["state"] != "needs-trust" {
		t.Fatalf("distrusted: %v", s)
	}
	p.trustGemini("TRUST_FOLDER")
	if s := p.statusOf("gemini-cli"); s["state"] != "active" {
		t.Fatalf("trusted again: %v", s)
	}

	if strings.Contains(stderr.String(), canary) {
		t.Fatalf("stderr carries the canary: %q", stderr.String())
	}
	files, all := treeScan(t, filepath.Join(p.dir, ".tree-ring"))
	if n := bytes.Count(all, []byte(canary)); n != 0 {
		t.Fatalf("the canary reached a file under .tree-ring (%d hits)", n)
	}
	t.Logf("canary: gemini hooks: %d files (%d bytes) under .tree-ring and %d bytes of stderr searched, 0 hits", files, len(all), stderr.Len())
	p.cli("audit", "verify")
}

// TestGeminiSettingsCreateOnly: an existing .gemini/settings.json is never
// changed; activation stops at review with the exact snippet, and the
// snippet merged by hand is recognized.
func TestGeminiSettingsCreateOnly(t *testing.T) {
	p := newProj(t, ".gemini")
	user := "{\n  \"general\": {\"vimMode\": true},\n  \"hooks\": {\"AfterAgent\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"echo done\"}]}]}\n}\n"
	p.write(".gemini/settings.json", user)
	before := sha256.Sum256([]byte(user))
	p.review("init")
	var r activateOut
	p.reviewJSON(&r, "integrations", "activate", "--harness", "gemini-cli")
	if r.State != "needs-user-review" || !strings.Contains(r.NextStep, ".gemini/settings.json already exists without Tree Ring's handlers") ||
		!strings.Contains(r.NextStep, "Merge these entries into .gemini/settings.json by hand") ||
		!strings.Contains(r.NextStep, strings.TrimSuffix(string(adapters.GeminiSettingsSnippet()), "\n")) {
		t.Fatalf("review: %+v", r)
	}
	if sha256.Sum256([]byte(p.read(".gemini/settings.json"))) != before {
		t.Fatal(".gemini/settings.json changed")
	}
	// The user merges the two entries.
	var doc, snip map[string]any
	_ = json.Unmarshal([]byte(user), &doc)
	_ = json.Unmarshal(adapters.GeminiSettingsSnippet(), &snip)
	hooks := doc["hooks"].(map[string]any)
	for ev, es := range snip["hooks"].(map[string]any) {
		prev, _ := hooks[ev].([]any)
		hooks[ev] = append(prev, es.([]any)...)
	}
	merged, _ := json.MarshalIndent(doc, "", "  ")
	p.write(".gemini/settings.json", string(merged))
	var rec reconcileOut
	p.applyJSON(&rec, "--harness", "gemini-cli")
	if st, _, next := rec.entry(t, "gemini-cli"); st != "configured-awaiting-proof" || p.read(".gemini/settings.json") != string(merged) ||
		!strings.Contains(next, "Until Gemini CLI trusts this folder it skips the project's hooks.") {
		t.Fatalf("after merging: %+v", rec)
	}
}
