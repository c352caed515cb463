package acceptance

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestHookFailureEndsTheSession breaks the project's store (an activation
// manifest that no longer decodes), so every lifecycle hook fails as the
// real binary fails: one line on stderr, nothing on stdout, the adapter's
// failure exit (1; Gemini CLI's AfterAgent is its stop). A session must then finish on its own after one model
// request, without memory and without turns added by the failing Stop hook:
// both clients read exit 2 from a Stop hook as "block and continue with
// stderr as the reason" (observed before the hook's failure exit was 1:
// Claude Code 2.1.328 added 8 turns, Codex 0.169.0 looped until killed,
// 342 model requests in 60 s; docs/acceptance.md, "Observed").
func TestHookFailureEndsTheSession(t *testing.T) {
	requireAcceptance(t)
	for _, c := range []npmClient{claudeCode, codexCLI, geminiCLI} {
		t.Run(c.Name, func(t *testing.T) {
			s := step{t, c.String()}
			bin := install(t, c)
			p := newProject(t, s, map[string]string{"claude-code": ".claude", "codex": ".codex", "gemini-cli": ".gemini"}[c.Name])
			m := NewMock(func(*Request) Reply { return Reply{Text: mainDone} })
			defer m.Close()
			var env, args []string
			switch c.Name {
			case "codex":
				root := p.root()
				home := filepath.Join(p.home, ".codex")
				writeFile(t, filepath.Join(home, "config.toml"), codexConfig(m.URL(), root, codexHookHashes(t, filepath.Join(root, ".codex", "hooks.json"))))
				env, args = p.env("CODEX_HOME="+home, "MOCK_API_KEY=dummy"), []string{"exec", "--json", "hello"}
			case "gemini-cli":
				root := p.root()
				writeJSONFile(t, filepath.Join(p.home, ".gemini", "settings.json"), map[string]any{"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}}})
				writeJSONFile(t, filepath.Join(p.home, ".gemini", "trustedFolders.json"), map[string]any{root: "TRUST_FOLDER"})
				env, args = p.env("GEMINI_API_KEY=dummy", "GOOGLE_GEMINI_BASE_URL="+m.URL()), []string{"-m", "mock-model", "-p", "hello", "--approval-mode", "yolo"}
			default:
				env, args = claudeEnv(p, m), []string{"-p", "hello", "--output-format", "json"}
			}
			writeFile(t, filepath.Join(p.dir, ".tree-ring", "activation.json"), "{}\n")
			_, errs, code := p.run(p.dir, time.Minute, env, "", bin, args...)
			reqs := m.Requests()
			t.Logf("%s with failing hooks: exit %d, %d model requests", c, code, len(reqs))
			if code != 0 {
				s.fatalf("failing hooks", "the session did not finish within a minute (exit %d, %d model requests): %s", code, len(reqs), tailS(errs, 5))
			}
			if anyRequest(reqs, func(r *Request) bool { return r.Contains(p.memory) }) {
				s.fatalf("failing hooks", "the memory reached the model although every hook failed")
			}
			if len(reqs) != 1 {
				s.fatalf("failing hooks", "%d model requests, want 1: the failing Stop hook added turns", len(reqs))
			}
		})
	}
}

// claudeEnv is Claude Code's headless environment against the mock.
func claudeEnv(p *project, m *Mock) []string {
	return p.env("ANTHROPIC_BASE_URL="+m.URL(), "ANTHROPIC_API_KEY=dummy", "DISABLE_TELEMETRY=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestClientsOnOutputThenFailure pins what each client does with a hook
// that wrote a complete SessionStart output and then failed (the case of a
// commit failure after the write, issue 12 item 3), and with an output
// object holding one key too many. The program answers every other event
// with nothing and exit 0. Observed: Claude Code 2.1.328 uses the context
// whatever the exit status (1 or 2) and ignores an unknown key; Codex
// 0.169.0 discards the output of a failed hook and drops an object with an
// unknown key, silently.
func TestClientsOnOutputThenFailure(t *testing.T) {
	requireAcceptance(t)
	const marker = "MARKER-delivered-3f9a"
	start := `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"` + marker + `"}`
	for _, c := range []struct {
		client    npmClient
		name      string
		output    string
		exit      int
		delivered bool
	}{
		{claudeCode, "output then exit 1", start + "}", 1, true},
		{claudeCode, "output then exit 2", start + "}", 2, true},
		{claudeCode, "an extra key", start + `,"extra":1}`, 0, true},
		{codexCLI, "output then exit 1", start + "}", 1, false},
		{codexCLI, "output then exit 2", start + "}", 2, false},
		{codexCLI, "an extra key", start + `,"extra":1}`, 0, false},
	} {
		t.Run(c.client.Name+"/"+c.name, func(t *testing.T) {
			s := step{t, c.client.String() + " (" + c.name + ")"}
			bin := install(t, c.client)
			p := newProject(t, s, map[string]string{"claude-code": ".claude", "codex": ".codex"}[c.client.Name])
			m := NewMock(func(*Request) Reply { return Reply{Text: mainDone} })
			defer m.Close()
			env, args := claudeEnv(p, m), []string{"-p", "hello", "--output-format", "json"}
			if c.client.Name == "codex" {
				root := p.root()
				home := filepath.Join(p.home, ".codex")
				writeFile(t, filepath.Join(home, "config.toml"), codexConfig(m.URL(), root, codexHookHashes(t, filepath.Join(root, ".codex", "hooks.json"))))
				env, args = p.env("CODEX_HOME="+home, "MOCK_API_KEY=dummy"), []string{"exec", "--json", "hello"}
			}
			program := "#!/bin/sh\nin=$(cat)\ncase \"$in\" in *'\"SessionStart\"'*) printf '%s\\n' '" + c.output + "'; exit " + strconv.Itoa(c.exit) + ";; esac\nexit 0\n"
			writeFile(t, filepath.Join(p.dir, ".tree-ring", "bin", "tree-ring"), program)
			if err := os.Chmod(filepath.Join(p.dir, ".tree-ring", "bin", "tree-ring"), 0o755); err != nil {
				t.Fatal(err)
			}
			_, errs, code := p.run(p.dir, 2*time.Minute, env, "", bin, args...)
			if code != 0 {
				s.fatalf("headless run", "exit %d: %s", code, tailS(errs, 10))
			}
			got := anyRequest(m.Requests(), func(r *Request) bool { return r.Contains(marker) })

			if got != c.delivered {
				s.fatalf("hook output", "the context reached the model: %v, want %v", got, c.delivered)
			}
		})
	}
}
