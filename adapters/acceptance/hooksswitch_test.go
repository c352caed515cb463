package acceptance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestClaudeCodeHooksSwitchedOff (issue 24 item 3): with
// `"disableAllHooks": true` in the project's local settings, then in the
// user's, the real Claude Code runs no hook (no SessionStart in its debug
// log, no memory in the model request, no receipt) and status is not
// active but configured-awaiting-proof with the step that switches them
// back on; switched back on, the next session runs the hook and status is
// active: the same project and client, so the switch alone made the
// difference.
func TestClaudeCodeHooksSwitchedOff(t *testing.T) {
	requireAcceptance(t)
	c := claudeCode
	s := step{t, c.String()}
	claude := install(t, c)
	p := newProject(t, s, ".claude")
	m := NewMock(func(*Request) Reply { return Reply{Text: mainDone} })
	defer m.Close()
	sessionStart := regexp.MustCompile(`SessionStart:startup .* finished`)
	session := func(check string) (ran bool) {
		t.Helper()
		before := len(m.Requests())
		debug := filepath.Join(t.TempDir(), "claude-debug.log")
		out, errs, code := p.run(p.dir, 2*time.Minute, claudeEnv(p, m), "", claude, "-p", "hello", "--output-format", "json", "--debug-file", debug)
		log, _ := os.ReadFile(debug)
		if code != 0 {
			s.fatalf(check, "exit %d\nstdout %s\nstderr %s\ndebug log tail:\n%s", code, out, errs, tail(log, 40))
		}
		delivered := anyRequest(m.Requests()[before:], func(r *Request) bool { return r.Contains(p.memory) })
		ran = sessionStart.Match(log)
		if ran != delivered {
			s.fatalf(check, "SessionStart ran %v but the memory reached the model %v:\n%s", ran, delivered, grepLines(log, "SessionStart", "hook"))
		}
		return ran
	}
	const step = "remove that setting (or set it to false), then open a new Claude Code session"
	for _, sw := range []struct{ path, shown string }{
		{filepath.Join(p.dir, ".claude", "settings.local.json"), ".claude/settings.local.json"},
		{filepath.Join(p.home, ".claude", "settings.json"), "~/.claude/settings.json"},
	} {
		check := "hooks switched off in " + sw.shown
		writeFile(t, sw.path, `{"disableAllHooks": true}`+"\n")
		if st, next := p.status("claude-code"); st != "configured-awaiting-proof" || !strings.Contains(next, sw.shown) || !strings.Contains(next, step) {
			s.fatalf(check, "status before the session: %s %q", st, next)
		}
		if session(check) {
			s.fatalf(check, "Claude Code ran the SessionStart hook")
		}
		if n := len(p.receipts("claude-code")); n != 0 {
			s.fatalf(check, "%d receipts", n)
		}
		if st, _ := p.status("claude-code"); st != "configured-awaiting-proof" {
			s.fatalf(check, "status after the session: %s", st)
		}
		if err := os.Remove(sw.path); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(p.home, ".claude", "settings.json"), `{"disableAllHooks": false}`+"\n")
	if !session("hooks switched back on") {
		s.fatalf("hooks switched back on", "Claude Code ran no SessionStart hook")
	}
	if st, _ := p.status("claude-code"); st != "active" {
		s.fatalf("hooks switched back on", "status %s", st)
	}
}

// status is the harness's state and next step in `integrations status
// --json`.
func (p *project) status(harness string) (state, next string) {
	p.t.Helper()
	var s struct {
		Integrations []struct {
			ID       string `json:"id"`
			State    string `json:"state"`
			NextStep string `json:"next_step"`
		} `json:"integrations"`
	}
	out, errs, code := p.run(p.dir, time.Minute, p.env(), "", p.bin, "--json", "integrations", "status")
	if code != 0 {
		p.s.fatalf("integrations status", "exit %d: %s%s", code, out, errs)
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		p.s.fatalf("integrations status", "%v: %s", err, out)
	}
	for _, i := range s.Integrations {
		if i.ID == harness {
			return i.State, i.NextStep
		}
	}
	p.s.fatalf("integrations status", "no %s in %s", harness, out)
	return "", ""
}

// Codex 0.169.0 switches its hooks off with `[features] hooks = false`, or
// the older `codex_hooks = false`, in $CODEX_HOME/config.toml or the
// project's .codex/config.toml, the project layer deciding (observed here,
// run by run): status must then not call the bridge configured, whatever
// receipt exists, and a later layer switching them back on turns it active.
func TestCodexHooksSwitchedOff(t *testing.T) {
	requireAcceptance(t)
	c := codexCLI
	s := step{t, c.String()}
	codex := install(t, c)
	p := newProject(t, s, ".codex")
	root := p.root()
	m := NewMock(func(*Request) Reply { return Reply{Text: mainDone} })
	defer m.Close()
	codexHome := filepath.Join(p.home, ".codex")
	env := p.env("CODEX_HOME="+codexHome, "MOCK_API_KEY=dummy")
	trusted := codexConfig(m.URL(), root, codexHookHashes(t, filepath.Join(root, ".codex", "hooks.json")))
	userConfig, projectConfig := filepath.Join(codexHome, "config.toml"), filepath.Join(p.dir, ".codex", "config.toml")
	session := func(check string) (delivered bool) {
		t.Helper()
		before := len(m.Requests())
		out, errs, code := p.run(p.dir, 4*time.Minute, env, "", codex, "exec", "--json", "hello")
		if code != 0 {
			s.fatalf(check, "exit %d\nstdout %s\nstderr %s", code, tailS(out, 20), tailS(errs, 20))
		}
		return anyRequest(m.Requests()[before:], func(r *Request) bool { return r.Contains(p.memory) })
	}
	const step = "remove that setting (or set it to true), then open a new Codex session"
	for _, sw := range []struct{ name, user, project, shown string }{
		{"[features] hooks = false in the user's config.toml", "\n[features]\nhooks = false\n", "", "~/.codex/config.toml"},
		{"codex_hooks = false in the user's config.toml", "\n[features]\ncodex_hooks = false\n", "", "~/.codex/config.toml"},
		{"hooks = false in the project's .codex/config.toml", "\n[features]\nhooks = true\n", "[features]\nhooks = false\n", ".codex/config.toml"},
	} {
		writeFile(t, userConfig, trusted+sw.user)
		if sw.project != "" {
			writeFile(t, projectConfig, sw.project)
		}
		if st, next := p.status("codex"); st != "configured-awaiting-proof" || !strings.Contains(next, sw.shown) || !strings.Contains(next, step) {
			s.fatalf(sw.name, "status before the session: %s %q", st, next)
		}
		if session(sw.name) {
			s.fatalf(sw.name, "Codex delivered the brief with its hooks switched off")
		}
		if n := len(p.receipts("codex")); n != 0 {
			s.fatalf(sw.name, "%d receipts", n)
		}
		if sw.project != "" {
			if err := os.Remove(projectConfig); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The project layer switches back on what the user switched off.
	writeFile(t, userConfig, trusted+"\n[features]\nhooks = false\n")
	writeFile(t, projectConfig, "[features]\nhooks = true\n")
	if !session("hooks switched back on by the project") {
		s.fatalf("hooks switched back on by the project", "Codex delivered no brief")
	}
	if st, _ := p.status("codex"); st != "active" {
		s.fatalf("hooks switched back on by the project", "status %s", st)
	}
	// A receipt from before the switch proves nothing about now.
	writeFile(t, projectConfig, "[features]\nhooks = false\n")
	if st, _ := p.status("codex"); st != "configured-awaiting-proof" {
		s.fatalf("switched off after a receipt", "status %s", st)
	}
}
