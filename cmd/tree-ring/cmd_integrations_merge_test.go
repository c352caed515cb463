package main

import (
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
)

// A Codex project with a .codex/hooks.json of its own (issue 12): init
// leaves it alone and exits 5 with the exact groups to merge; once the user
// merged them, the printed retry succeeds (it creates AGENTS.md and the
// skill, never touching hooks.json), status asks for the trust hashes of
// Tree Ring's groups where they sit in the user's file (Stop is the second
// group there), and once those lines are in config.toml the hook proves it.
func TestCodexForeignHooksMerged(t *testing.T) {
	p := newHP(t, ".codex")
	codexHome := filepath.Join(filepath.Dir(p.home), "codex-home")
	p.env["CODEX_HOME"] = writeCodexHome(t, codexHome, codexConfig(t, p.dir, true, false))
	hooksPath := filepath.Join(p.dir, ".codex", "hooks.json")
	user := `{"description":"mine","hooks":{"Stop":[{"hooks":[{"type":"command","command":"echo bye","timeout":5}]}],` +
		`"PreToolUse":[{"matcher":"shell","hooks":[{"type":"command","command":"echo tool"}]}]}}` + "\n"
	if err := os.WriteFile(hooksPath, []byte(user), 0o644); err != nil {
		t.Fatal(err)
	}

	r := p.run("", "--json", "init")
	var in initOut
	if err := json.Unmarshal([]byte(r.stdout), &in); err != nil || r.code != exitReview {
		t.Fatalf("init: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	next := in.next("codex")
	snippet := strings.TrimSuffix(string(adapters.CodexHooksSnippet()), "\n")
	retry := "`tree-ring integrations reconcile --apply --harness codex`"
	if in.states()["codex"] != "needs-user-review" || !strings.Contains(next, "Merge these entries into .codex/hooks.json by hand") ||
		!strings.HasSuffix(next, "keeping your own), then run "+retry+":\n"+snippet) {
		t.Fatalf("codex %s, next step:\n%s", in.states()["codex"], next)
	}
	if got, _ := os.ReadFile(hooksPath); string(got) != user || fileExists(filepath.Join(p.dir, "AGENTS.md")) {
		t.Fatal("init changed .codex/hooks.json or published part of the codex bridge")
	}

	// The user merges the snippet, keeping their own groups first.
	var doc, snip map[string]any
	if err := json.Unmarshal([]byte(user), &doc); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(adapters.CodexHooksSnippet(), &snip); err != nil {
		t.Fatal(err)
	}
	hooks := doc["hooks"].(map[string]any)
	for ev, groups := range snip["hooks"].(map[string]any) {
		have, _ := hooks[ev].([]any)
		hooks[ev] = append(have, groups.([]any)...)
	}
	merged, _ := json.MarshalIndent(doc, "", "    ")
	if err := os.WriteFile(hooksPath, merged, 0o644); err != nil {
		t.Fatal(err)
	}

	var a reconcileOut
	if err := json.Unmarshal([]byte(p.ok("", "--json", "integrations", "reconcile", "--apply", "--harness", "codex")), &a); err != nil {
		t.Fatal(err)
	}
	if st, created, _ := a.entry(t, "codex"); st != "configured-awaiting-proof" || strings.Join(created, ",") != ".agents/skills/tree-ring-memory/SKILL.md,AGENTS.md" {
		t.Fatalf("retry: %+v", a)
	}
	if got, _ := os.ReadFile(hooksPath); sha256.Sum256(got) != sha256.Sum256(merged) {
		t.Fatal("activate changed the merged .codex/hooks.json")
	}

	st := p.status()["codex"]
	trustNext, _ := st["next_step"].(string)
	stopKey := `[hooks.state."` + hooksPath + `:stop:1:0"]`
	if st["state"] != "needs-trust" || !strings.Contains(trustNext, stopKey) || strings.Contains(trustNext, ":stop:0:0") {
		t.Fatalf("status %v", st)
	}
	// The user adds the printed lines; status now says what the hook
	// proves, and the hook does.
	const lead, tail = "`$CODEX_HOME/config.toml` (default `~/.codex/config.toml`):\n", "\nThen open a new Codex session."
	i, j := strings.Index(trustNext, lead), strings.LastIndex(trustNext, tail)
	if i < 0 || j < i {
		t.Fatalf("no config lines in %q", trustNext)
	}
	writeCodexHome(t, codexHome, codexConfig(t, p.dir, true, false)+"\n"+trustNext[i+len(lead):j]+"\n")
	if got := p.state("codex"); got != "configured-awaiting-proof" {
		t.Fatalf("after trusting the printed hooks: %s", got)
	}
	if r := p.hook("codex", p.payload("codex", "session-start.json", nil)); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if got := p.state("codex"); got != "active" {
		t.Fatalf("after the hook: %s", got)
	}
	p.ok("", "audit", "verify")
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
