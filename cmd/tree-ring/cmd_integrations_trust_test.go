package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
)

// Codex's two trust layers, as status reads them from $CODEX_HOME/config.toml
// (issue 12 item 2): needs-trust unless both hold, and a receipt made
// while they do not (a preflight run by hand) does not turn it active.
func TestStatusCodexTrust(t *testing.T) {
	for _, c := range []struct {
		name           string
		project, hooks bool
		want           string
		next           string
	}{
		{"untrusted project and hooks", false, false, "needs-trust", "this project and Tree Ring's hooks"},
		{"untrusted project, trusted hooks", false, true, "needs-trust", "`codex exec --trust` once"},
		{"trusted project, untrusted hooks", true, false, "needs-trust", "`/hooks`"},
		{"trusted project and hooks", true, true, "configured-awaiting-proof", "Open a new Codex session"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newHP(t, ".codex")
			p.env["CODEX_HOME"] = writeCodexHome(t, filepath.Join(t.TempDir(), "codex"), codexConfig(t, p.dir, c.project, c.hooks))
			p.init()
			st := p.status()["codex"]
			if st["state"] != c.want || !strings.Contains(st["next_step"].(string), c.next) {
				t.Fatalf("status %v, want %s with %q", st, c.want, c.next)
			}
			// The hook itself runs (a fake Codex): proof while the settings
			// say Codex would skip it is not active.
			if r := p.hook("codex", p.payload("codex", "session-start.json", nil)); r.code != 0 {
				t.Fatal(r.stderr)
			}
			want := c.want
			if want == "configured-awaiting-proof" {
				want = "active"
			}
			if got := p.state("codex"); got != want {
				t.Fatalf("after a receipt: %s, want %s", got, want)
			}
		})
	}
}

// An unreadable or malformed Codex config is a diagnostic, never a guess.
func TestStatusCodexConfigBroken(t *testing.T) {
	for _, c := range []struct {
		name, config, diag string
	}{
		{"syntax error", "[projects.\"x\"\n", adapters.DiagCodexConfigMalformed},
		{"wrong type", "projects = 3\n", adapters.DiagCodexConfigMalformed},
		{"too large", strings.Repeat("# padding\n", 120_000), adapters.DiagCodexConfigMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newHP(t, ".codex")
			p.env["CODEX_HOME"] = writeCodexHome(t, filepath.Join(t.TempDir(), "codex"), c.config)
			p.init()
			st := p.status()["codex"]
			if st["state"] != "failed" || st["diagnostic"] != c.diag || !strings.Contains(st["next_step"].(string), "cannot be read") {
				t.Fatalf("status %v", st)
			}
			if strings.Contains(st["next_step"].(string), p.env["CODEX_HOME"]) {
				t.Fatal("the next step echoes CODEX_HOME's value")
			}
			human := p.ok("", "integrations", "status")
			if !strings.Contains(human, "Codex: failed\n  diagnostic: "+c.diag+"\n") {
				t.Fatalf("human status:\n%s", human)
			}
		})
	}
	p := newHP(t, ".codex")
	delete(p.env, "CODEX_HOME")
	delete(p.env, "HOME")
	p.init()
	if st := p.status()["codex"]; st["state"] != "failed" || st["diagnostic"] != adapters.DiagCodexHomeUnknown {
		t.Fatalf("no HOME: %v", st)
	}
}
