package adapters

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/tree-ring/tree-ring/adapters/codexconfig"
)

// A host may switch its hooks off by a setting of its own: it then runs no
// bridge of ours, so no session can prove it, and a receipt from before the
// switch says nothing about now (issue 24 item 3). Tree Ring reads those
// settings read-only, as it reads a host's trust (docs/preflight.md, "What
// counts as proof").

// HooksOff is a host's switch read live: File names where the bridge's
// hooks are switched off ("": they run, as far as Tree Ring can tell).
type HooksOff struct {
	// File is where the switch is, as the user names it: project-relative
	// (".claude/settings.local.json"), "~/..." under the home directory, or
	// the host's absolute managed-settings path (never the project's
	// absolute path).
	File string
	// Next is the step that switches them back on.
	Next string
	// Diagnostic is a code when a settings file that may hold the switch
	// cannot be read or parsed (the host's own verdict is then unknown).
	Diagnostic string
}

// HooksSwitchedOffDiagnostic is the code of a settings file Tree Ring could
// not read while looking for a host's switch.
const HooksSwitchedOffDiagnostic = "host_settings_unreadable"

// claudeSettingsLocal is Claude Code's per-user project settings file,
// read with the project's .claude/settings.json.
const claudeSettingsLocal = ".claude/settings.local.json"

// claudeManagedDir is where Claude Code reads managed (enterprise) settings
// on this platform: managed-settings.json and the managed-settings.d
// drop-ins.
func claudeManagedDir() string {
	switch runtime.GOOS {
	case "darwin":
		return "/Library/Application Support/ClaudeCode"
	case "windows":
		return `C:\Program Files\ClaudeCode`
	}
	return "/etc/claude-code"
}

// claudeHooksOff is Claude Code's switch (Claude Code 2.1.328, its bundled
// settings schema and hook loader): `"disableAllHooks": true` in the
// merged user ($CLAUDE_CONFIG_DIR or ~/.claude/settings.json), project
// (.claude/settings.json) and local (.claude/settings.local.json) settings,
// the later file deciding where several set it, turns every hook of the
// project's settings off; in managed settings, disableAllHooks or
// allowManagedHooksOnly set to true does, whatever the others say.
func claudeHooksOff(q TrustQuery) HooksOff { return claudeHooksOffIn(q, claudeManagedDir()) }

func claudeHooksOffIn(q TrustQuery, managedDir string) HooksOff {
	managed := []string{filepath.Join(managedDir, "managed-settings.json")}
	dropIns, _ := filepath.Glob(filepath.Join(managedDir, "managed-settings.d", "*.json"))
	sort.Strings(dropIns)
	for _, path := range append(managed, dropIns...) {
		keys, err := hostSettingsKeys(path)
		if err != nil {
			return claudeUnreadable(path, err)
		}
		for _, k := range []string{"disableAllHooks", "allowManagedHooksOnly"} {
			if isTrue(keys[k]) {
				return HooksOff{File: path,
					Next: "Claude Code runs no hook of this project: managed settings switch them off (`\"" + k + "\": true` in " + path + "); only your administrator can switch them back on, and until then no session can prove the bridge."}
			}
		}
	}
	var off HooksOff
	user, shown := claudeUserSettings(q.Getenv)
	sources := []struct {
		read func() (map[string]json.RawMessage, error)
		file string
	}{
		{func() (map[string]json.RawMessage, error) { return hostSettingsKeys(user) }, shown},
		{func() (map[string]json.RawMessage, error) { return projectSettingsKeys(q.Root, claudeSettings) }, claudeSettings},
		{func() (map[string]json.RawMessage, error) { return projectSettingsKeys(q.Root, claudeSettingsLocal) }, claudeSettingsLocal},
	}
	for _, s := range sources {
		keys, err := s.read()
		if err != nil {
			return claudeUnreadable(s.file, err)
		}
		switch v, ok := keys["disableAllHooks"]; {
		case !ok:
		case isTrue(v):
			off = HooksOff{File: s.file,
				Next: "Claude Code runs no hook: `\"disableAllHooks\": true` in " + s.file + " switches them off; remove that setting (or set it to false), then open a new Claude Code session to prove the bridge."}
		default:
			off = HooksOff{} // a later file that sets it otherwise decides
		}
	}
	return off
}

// claudeUserSettings is the user's Claude Code settings file and how a
// step names it.
func claudeUserSettings(getenv func(string) string) (path, shown string) {
	if dir := getenv("CLAUDE_CONFIG_DIR"); dir != "" {
		return filepath.Join(dir, "settings.json"), "$CLAUDE_CONFIG_DIR/settings.json"
	}
	return filepath.Join(getenv("HOME"), ".claude", "settings.json"), "~/.claude/settings.json"
}

func claudeUnreadable(file string, err error) HooksOff {
	return HooksOff{Diagnostic: HooksSwitchedOffDiagnostic,
		Next: "Tree Ring could not read " + file + " (" + err.Error() + ") to tell whether it switches Claude Code's hooks off; repair that file, then run `tree-ring integrations status` again."}
}

// hostSettingsKeys reads the top-level keys of a JSON settings file outside
// the project (nil: no file).
func hostSettingsKeys(path string) (map[string]json.RawMessage, error) {
	data, exists, err := readHostFile(path, MaxBridgeFileBytes)
	if err != nil || !exists {
		return nil, err
	}
	return settingsKeys(data)
}

// projectSettingsKeys reads the top-level keys of a JSON settings file in
// the project through the pinned root (nil: no file, or no root).
func projectSettingsKeys(root *ProjectRoot, rel string) (map[string]json.RawMessage, error) {
	if root == nil {
		return nil, nil
	}
	e, err := root.ReadFile(rel, MaxBridgeFileBytes)
	if err != nil || !e.Exists {
		return nil, pathless(err)
	}
	return settingsKeys(e.Data)
}

// settingsKeys decodes a settings document's top level. An empty file is
// no settings (the hosts read it so).
func settingsKeys(data []byte) (map[string]json.RawMessage, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, errors.New("invalid JSON")
		}
		return nil, errors.New("not a JSON object")
	}
	return keys, nil
}

// isTrue reports whether v is the JSON literal true (the hosts compare with
// === true: a string "true" switches nothing off).
func isTrue(v json.RawMessage) bool { return strings.TrimSpace(string(v)) == "true" }

// geminiHookName is the name of every handler entry Tree Ring writes for
// Gemini CLI (geminiEntryFor), which hooksConfig.disabled lists.
const geminiHookName = "tree-ring-memory"

// geminiHooksOff is Gemini CLI's switch (Gemini CLI 0.61.0, its settings
// schema and hook registry): hooksConfig.enabled false turns every hook
// off, and a hooksConfig.disabled list naming tree-ring-memory turns ours
// off. The settings merge in the order system defaults, user
// ($GEMINI_CLI_HOME or $HOME, .gemini/settings.json), the project's
// .gemini/settings.json, system settings, the later deciding enabled; the
// disabled lists are joined. Comments are allowed, as Gemini allows them.
func geminiHooksOff(q TrustQuery) HooksOff {
	system := q.Getenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
	if system == "" {
		system = map[string]string{"darwin": "/Library/Application Support/GeminiCli/settings.json",
			"windows": `C:\ProgramData\gemini-cli\settings.json`}[runtime.GOOS]
	}
	if system == "" {
		system = "/etc/gemini-cli/settings.json"
	}
	defaults := q.Getenv("GEMINI_CLI_SYSTEM_DEFAULTS_PATH")
	if defaults == "" {
		defaults = filepath.Join(filepath.Dir(system), "system-defaults.json")
	}
	return geminiHooksOffIn(q, defaults, system)
}

func geminiHooksOffIn(q TrustQuery, defaults, system string) HooksOff {
	home, shownHome := q.Getenv("GEMINI_CLI_HOME"), "$GEMINI_CLI_HOME"
	if home == "" {
		home, shownHome = q.Getenv("HOME"), "~"
	}
	sources := []struct {
		read func() ([]byte, bool, error)
		file string
	}{
		{func() ([]byte, bool, error) { return readHostFile(defaults, MaxBridgeFileBytes) }, defaults},
		{func() ([]byte, bool, error) {
			return readHostFile(filepath.Join(home, ".gemini", "settings.json"), MaxBridgeFileBytes)
		}, shownHome + "/.gemini/settings.json"},
		{func() ([]byte, bool, error) {
			if q.Root == nil {
				return nil, false, nil
			}
			e, err := q.Root.ReadFile(geminiSettings, MaxBridgeFileBytes)
			return e.Data, e.Exists, pathless(err)
		}, geminiSettings},
		{func() ([]byte, bool, error) { return readHostFile(system, MaxBridgeFileBytes) }, system},
	}
	var off, disabled HooksOff
	for _, s := range sources {
		data, exists, err := s.read()
		var doc struct {
			HooksConfig struct {
				Enabled  *bool    `json:"enabled"`
				Disabled []string `json:"disabled"`
			} `json:"hooksConfig"`
		}
		if err == nil && exists && len(bytes.TrimSpace(data)) > 0 {
			if json.Unmarshal(stripJSONComments(data), &doc) != nil {
				err = errors.New("not a JSON settings object")
			}
		}
		if err != nil {
			return HooksOff{Diagnostic: HooksSwitchedOffDiagnostic,
				Next: "Tree Ring could not read " + s.file + " (" + err.Error() + ") to tell whether it switches Gemini CLI's hooks off; repair that file, then run `tree-ring integrations status` again."}
		}
		switch e := doc.HooksConfig.Enabled; {
		case e == nil:
		case !*e:
			off = HooksOff{File: s.file,
				Next: "Gemini CLI runs no hook: `\"hooksConfig\": {\"enabled\": false}` in " + s.file + " switches them off; remove that setting (or set it to true), then open a new Gemini CLI session to prove the bridge."}
		default:
			off = HooksOff{}
		}
		if disabled.File == "" && slices.Contains(doc.HooksConfig.Disabled, geminiHookName) {
			disabled = HooksOff{File: s.file,
				Next: "Gemini CLI runs none of Tree Ring's hooks: hooksConfig.disabled in " + s.file + " lists \"" + geminiHookName + "\"; remove it from that list (or run `/hooks enable " + geminiHookName + "` in Gemini CLI), then open a new Gemini CLI session to prove the bridge."}
		}
	}
	if off.File == "" {
		return disabled
	}
	return off
}

// codexProjectConfig is the project's own Codex configuration layer.
const codexProjectConfig = ".codex/config.toml"

// codexHooksOff is Codex CLI's switch (Codex 0.169.0, observed against the
// real client in TestCodexHooksSwitchedOff): `[features] hooks = false`
// (or the older name codex_hooks) in $CODEX_HOME/config.toml or in the
// project's .codex/config.toml turns every lifecycle hook off; the project
// layer decides over the user's. A session's own -c or --disable flags and
// profiles are not on disk, so status cannot see them.
func codexHooksOff(q TrustQuery) HooksOff {
	home, shown := codexHome(q.Getenv)
	user := shown + "/config.toml"
	sources := []struct {
		read func() ([]byte, bool, error)
		file string
	}{
		{func() ([]byte, bool, error) {
			if home == "" {
				return nil, false, nil // the trust gate names the missing home
			}
			return readHostFile(filepath.Join(home, "config.toml"), codexconfig.MaxBytes)
		}, user},
		{func() ([]byte, bool, error) {
			if q.Root == nil {
				return nil, false, nil
			}
			e, err := q.Root.ReadFile(codexProjectConfig, codexconfig.MaxBytes)
			return e.Data, e.Exists, pathless(err)
		}, codexProjectConfig},
	}
	var off HooksOff
	for _, s := range sources {
		data, exists, err := s.read()
		var cfg codexconfig.Config
		if err == nil && exists {
			cfg, err = codexconfig.Parse(data)
		}
		if err != nil {
			return HooksOff{Diagnostic: HooksSwitchedOffDiagnostic,
				Next: "Tree Ring could not read " + s.file + " (" + err.Error() + ") to tell whether it switches Codex's hooks off; repair that file (`codex` reports its own error), then run `tree-ring integrations status` again."}
		}
		switch {
		case cfg.Hooks == nil:
		case !*cfg.Hooks:
			off = HooksOff{File: s.file,
				Next: "Codex runs no hook: `[features] hooks = false` (or `codex_hooks = false`) in " + s.file + " switches them off; remove that setting (or set it to true), then open a new Codex session to prove the bridge."}
		default:
			off = HooksOff{} // a later layer that sets it otherwise decides
		}
	}
	return off
}
