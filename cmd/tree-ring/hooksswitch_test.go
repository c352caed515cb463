package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Hooks switched off are not active (issue 24 item 3): Claude Code runs no
// hook while disableAllHooks is true in the project's, the local or the
// user's settings, so status says configured-awaiting-proof with the step
// that switches them back on, although a fresh receipt exists; status reads
// those files and changes nothing; switched back on, the receipt stands.
func TestClaudeHooksSwitchedOffNotActive(t *testing.T) {
	for _, c := range []struct{ name, file, shown string }{
		{"local settings", ".claude/settings.local.json", ".claude/settings.local.json"},
		{"user settings", "~/.claude/settings.json", "~/.claude/settings.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newHP(t, ".claude")
			p.init()
			if r := p.hook("claude-code", p.payload("claude-code", "session-start.json", nil)); r.code != 0 {
				t.Fatal(r.stderr)
			}
			if st := p.state("claude-code"); st != "active" {
				t.Fatalf("after the hook: %s", st)
			}
			path := filepath.Join(p.dir, c.file)
			if strings.HasPrefix(c.file, "~/") {
				path = filepath.Join(p.home, c.file[2:])
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(`{"disableAllHooks": true}`), 0o644); err != nil {
				t.Fatal(err)
			}
			before := hashTree(t, p.dir)
			st := p.status()["claude-code"]
			next, _ := st["next_step"].(string)
			if st["state"] != "configured-awaiting-proof" || !strings.Contains(next, "`\"disableAllHooks\": true` in "+c.shown+" switches them off; remove that setting") {
				t.Fatalf("switched off: %v", st)
			}
			if after := hashTree(t, p.dir); !mapsEqual(before, after) {
				t.Fatal("status changed the project")
			}
			if b, _ := os.ReadFile(path); string(b) != `{"disableAllHooks": true}` {
				t.Fatal("status changed the settings")
			}
			if err := os.WriteFile(path, []byte(`{"disableAllHooks": false}`), 0o644); err != nil {
				t.Fatal(err)
			}
			if st := p.state("claude-code"); st != "active" {
				t.Fatalf("switched back on: %s", st)
			}
		})
	}
}
