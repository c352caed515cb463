package adapters

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Claude Code's switch (issue 24 item 3): disableAllHooks in the user's,
// the project's or the local settings, the later deciding, and managed
// settings that switch the project's hooks off whatever the others say.
// Each file is read, never written.
func TestClaudeHooksOff(t *testing.T) {
	const on, off = `{"disableAllHooks": false}`, `{"theme": "dark", "disableAllHooks": true}`
	for _, c := range []struct {
		name              string
		files             map[string]string // "user", "config", "managed", "dropin" or a project path
		configDir         bool              // CLAUDE_CONFIG_DIR set
		file, diag, inMsg string            // want: the switch's file ("" none), a diagnostic, a substring of the step
	}{
		{name: "no settings"},
		{name: "other keys only", files: map[string]string{"user": `{"theme": "dark"}`, claudeSettingsLocal: `{}`}},
		{name: "user settings", files: map[string]string{"user": off}, file: "~/.claude/settings.json",
			inMsg: "Claude Code runs no hook: `\"disableAllHooks\": true` in ~/.claude/settings.json switches them off; remove that setting (or set it to false), then open a new Claude Code session"},
		{name: "CLAUDE_CONFIG_DIR", configDir: true, files: map[string]string{"config": off, "user": on}, file: "$CLAUDE_CONFIG_DIR/settings.json"},
		{name: "CLAUDE_CONFIG_DIR replaces ~/.claude", configDir: true, files: map[string]string{"user": off}},
		{name: "project settings", files: map[string]string{claudeSettings: off}, file: claudeSettings},
		{name: "local settings", files: map[string]string{claudeSettingsLocal: off}, file: claudeSettingsLocal},
		{name: "local switches back on what the user switched off", files: map[string]string{"user": off, claudeSettingsLocal: on}},
		{name: "local switches off what the project left on", files: map[string]string{claudeSettings: on, claudeSettingsLocal: off}, file: claudeSettingsLocal},
		{name: "a string is not true", files: map[string]string{claudeSettingsLocal: `{"disableAllHooks": "true"}`}},
		{name: "managed disableAllHooks", files: map[string]string{"managed": `{"disableAllHooks": true}`, claudeSettingsLocal: on}, file: "managed-settings.json",
			inMsg: "only your administrator can switch them back on"},
		{name: "managed hooks only", files: map[string]string{"managed": `{"allowManagedHooksOnly": true}`}, file: "managed-settings.json"},
		{name: "a managed drop-in", files: map[string]string{"dropin": `{"disableAllHooks": true}`}, file: "10-policy.json"},
		{name: "managed settings that leave them on", files: map[string]string{"managed": `{"allowManagedHooksOnly": false}`}},
		{name: "empty local settings", files: map[string]string{claudeSettingsLocal: "\n"}},
		{name: "malformed local settings", files: map[string]string{claudeSettingsLocal: `{"disableAllHooks": tru`}, diag: HooksSwitchedOffDiagnostic,
			inMsg: "Tree Ring could not read .claude/settings.local.json (invalid JSON)"},
		{name: "user settings not an object", files: map[string]string{"user": `[true]`}, diag: HooksSwitchedOffDiagnostic, inMsg: "~/.claude/settings.json (not a JSON object)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, dir := openTestRoot(t)
			base := t.TempDir()
			home, config, managed := filepath.Join(base, "home"), filepath.Join(base, "config"), filepath.Join(base, "managed")
			paths := map[string]string{
				"user": filepath.Join(home, ".claude", "settings.json"), "config": filepath.Join(config, "settings.json"),
				"managed": filepath.Join(managed, "managed-settings.json"), "dropin": filepath.Join(managed, "managed-settings.d", "10-policy.json"),
			}
			writeSettings(t, c.files, paths, dir)
			env := map[string]string{"HOME": home}
			if c.configDir {
				env["CLAUDE_CONFIG_DIR"] = config
			}
			got := claudeHooksOffIn(TrustQuery{Project: dir, Getenv: func(k string) string { return env[k] }, Root: r}, managed)
			checkHooksOff(t, got, c.file, c.diag, c.inMsg, false, dir, home)
			for k, data := range c.files {
				p, ok := paths[k]
				if !ok {
					p = filepath.Join(dir, k)
				}
				if b, _ := os.ReadFile(p); string(b) != data {
					t.Fatalf("%s changed", k)
				}
			}
		})
	}
}

// Gemini CLI's switch: hooksConfig.enabled false in any of its settings
// scopes (the later deciding), or hooksConfig.disabled naming Tree Ring's
// hook in any of them; comments allowed.
func TestGeminiHooksOff(t *testing.T) {
	const off, on = `{"hooksConfig": {"enabled": false}}`, `{"hooksConfig": {"enabled": true}}`
	for _, c := range []struct {
		name              string
		files             map[string]string // "defaults", "user", "system" or a project path
		geminiHome        bool
		file, diag, inMsg string
	}{
		{name: "no settings"},
		{name: "user settings", files: map[string]string{"user": "// mine\n" + off}, file: "~/.gemini/settings.json",
			inMsg: "Gemini CLI runs no hook: `\"hooksConfig\": {\"enabled\": false}` in ~/.gemini/settings.json switches them off"},
		{name: "GEMINI_CLI_HOME", geminiHome: true, files: map[string]string{"user": off}, file: "$GEMINI_CLI_HOME/.gemini/settings.json"},
		{name: "project settings", files: map[string]string{geminiSettings: off}, file: geminiSettings},
		{name: "the project switches back on what the user switched off", files: map[string]string{"user": off, geminiSettings: on}},
		{name: "system settings override the project", files: map[string]string{geminiSettings: on, "system": off}, file: "system.json"},
		{name: "system defaults yield to the user", files: map[string]string{"defaults": off, "user": on}},
		{name: "system defaults", files: map[string]string{"defaults": off}, file: "defaults.json"},
		{name: "our hook disabled by name", files: map[string]string{"user": `{"hooksConfig": {"disabled": ["other", "tree-ring-memory"]}}`}, file: "~/.gemini/settings.json",
			inMsg: "`/hooks enable tree-ring-memory`"},
		{name: "another hook disabled", files: map[string]string{"user": `{"hooksConfig": {"disabled": ["other"]}}`}},
		{name: "malformed project settings", files: map[string]string{geminiSettings: `{"hooksConfig": `}, diag: HooksSwitchedOffDiagnostic,
			inMsg: "Tree Ring could not read .gemini/settings.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, dir := openTestRoot(t)
			base := t.TempDir()
			home, ghome := filepath.Join(base, "home"), filepath.Join(base, "ghome")
			paths := map[string]string{"defaults": filepath.Join(base, "defaults.json"), "system": filepath.Join(base, "system.json"),
				"user": filepath.Join(home, ".gemini", "settings.json")}
			env := map[string]string{"HOME": home}
			if c.geminiHome {
				env["GEMINI_CLI_HOME"] = ghome
				paths["user"] = filepath.Join(ghome, ".gemini", "settings.json")
			}
			writeSettings(t, c.files, paths, dir)
			got := geminiHooksOffIn(TrustQuery{Project: dir, Getenv: func(k string) string { return env[k] }, Root: r}, paths["defaults"], paths["system"])
			checkHooksOff(t, got, c.file, c.diag, c.inMsg, false, dir, home)
		})
	}
}

// Codex's switch: [features] hooks (or codex_hooks) false in the user's
// config.toml or the project's .codex/config.toml, the project deciding.
func TestCodexHooksOff(t *testing.T) {
	const off, on = "model = \"m\"\n[features]\nhooks = false\n", "[features]\nhooks = true\n"
	for _, c := range []struct {
		name              string
		files             map[string]string // "user" or a project path
		codexHome         bool
		file, diag, inMsg string
	}{
		{name: "no configuration"},
		{name: "other features only", files: map[string]string{"user": "[features]\nweb_search = true\n"}},
		{name: "user configuration", files: map[string]string{"user": off}, file: "~/.codex/config.toml",
			inMsg: "Codex runs no hook: `[features] hooks = false` (or `codex_hooks = false`) in ~/.codex/config.toml switches them off; remove that setting (or set it to true), then open a new Codex session"},
		{name: "CODEX_HOME", codexHome: true, files: map[string]string{"user": off}, file: "$CODEX_HOME/config.toml"},
		{name: "the older name", files: map[string]string{"user": "[features]\ncodex_hooks = false\n"}, file: "~/.codex/config.toml"},
		{name: "project configuration", files: map[string]string{codexProjectConfig: off}, file: codexProjectConfig},
		{name: "the project switches back on what the user switched off", files: map[string]string{"user": off, codexProjectConfig: on}},
		{name: "the project switches off what the user left on", files: map[string]string{"user": on, codexProjectConfig: off}, file: codexProjectConfig},
		{name: "malformed project configuration", files: map[string]string{codexProjectConfig: "[features]\nhooks = \n"}, diag: HooksSwitchedOffDiagnostic,
			inMsg: "Tree Ring could not read .codex/config.toml (not valid TOML at line 2"},
		{name: "a string is not a switch", files: map[string]string{"user": "[features]\nhooks = \"false\"\n"}, diag: HooksSwitchedOffDiagnostic,
			inMsg: "~/.codex/config.toml (projects, "},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, dir := openTestRoot(t)
			base := t.TempDir()
			home, chome := filepath.Join(base, "home"), filepath.Join(base, "chome")
			paths := map[string]string{"user": filepath.Join(home, ".codex", "config.toml")}
			env := map[string]string{"HOME": home}
			if c.codexHome {
				env["CODEX_HOME"] = chome
				paths["user"] = filepath.Join(chome, "config.toml")
			}
			writeSettings(t, c.files, paths, dir)
			got := codexHooksOff(TrustQuery{Project: dir, Getenv: func(k string) string { return env[k] }, Root: r})
			checkHooksOff(t, got, c.file, c.diag, c.inMsg, true, dir, base)
		})
	}
}

// The hosts whose switch Tree Ring reads (docs/adapters/*.md says why the
// others have none it can read).
func TestHooksSwitchAdapters(t *testing.T) {
	for _, a := range All() {
		if got := a.HooksSwitch != nil; got != (a.ID == "claude-code" || a.ID == "gemini-cli" || a.ID == "codex") {
			t.Errorf("%s: HooksSwitch set %v", a.ID, got)
		}
	}
}

// writeSettings writes each of files (a key of paths, or a project path)
// for a hooks-switch case.
func writeSettings(t *testing.T, files, paths map[string]string, dir string) {
	t.Helper()
	for k, data := range files {
		p, ok := paths[k]
		if !ok {
			p = filepath.Join(dir, k)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkHooksOff asserts a switch read: its diagnostic, the file it names
// (exactly, or as a suffix for an absolute host path; "" none), a
// substring of its step, and a step that names neither dir nor home.
func checkHooksOff(t *testing.T, got HooksOff, file, diag, inMsg string, exact bool, dir, home string) {
	t.Helper()
	named := got.File == file || !exact && file != "" && strings.HasSuffix(got.File, file)
	switch {
	case got.Diagnostic != diag:
		t.Fatalf("diagnostic %q, want %q (%+v)", got.Diagnostic, diag, got)
	case file == "" && got.File != "", file != "" && !named:
		t.Fatalf("switch in %q, want %q (%+v)", got.File, file, got)
	case (got.File != "" || got.Diagnostic != "") && !strings.Contains(got.Next, inMsg):
		t.Fatalf("step %q lacks %q", got.Next, inMsg)
	case strings.Contains(got.Next, dir) || strings.Contains(got.Next, home):
		t.Fatalf("the step names the project's or the home's absolute path: %q", got.Next)
	}
}
