package adapters

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tree-ring/tree-ring/adapters/codexconfig"
)

// Codex CLI 0.169 runs a project's hooks only when both of its trust layers
// hold in $CODEX_HOME/config.toml (default ~/.codex): the project is
// trusted ([projects."<abs root>"] trust_level = "trusted", which
// `codex exec --trust` writes once) and each hook is trusted
// ([hooks.state."<abs root>/.codex/hooks.json:<event>:<group>:<handler>"]
// trusted_hash = "sha256:<hex>", which the interactive /hooks review
// writes; `codex exec` has no review screen and skips untrusted hooks
// silently). docs/adapters/codex.md has the observations.

// Diagnostic codes of a Codex trust inspection that could not decide.
const (
	DiagCodexHomeUnknown     = "codex_home_unknown"
	DiagCodexConfigRead      = "codex_config_unreadable"
	DiagCodexConfigMalformed = "codex_config_malformed"
)

// codexConfigPath is how next steps name the file: the environment's value
// is never echoed.
const codexConfigPath = "`$CODEX_HOME/config.toml` (default `~/.codex/config.toml`)"

// codexEventKeys maps hooks.json event names to the snake-case names in
// Codex's hook keys.
var codexEventKeys = map[string]string{
	"SessionStart": "session_start", "SubagentStart": "subagent_start", "Stop": "stop", "SubagentStop": "subagent_stop",
}

// CodexHookHashes computes, for each handler of the hooks.json document
// hooksJSON at absolute path file, Codex 0.169's hook key
// ("<file>:<event>:<group>:<handler>") and the trusted_hash it compares:
// "sha256:" and the hex SHA-256 of the sorted-key compact JSON of
// {event_name, matcher, hooks:[{type, command, timeout, async:false,
// statusMessage, additionalContextLimit}]}, fields absent from the file
// left out. The acceptance suite checks it against the client's own
// hooks/list (adapters/acceptance, TestCodex).
func CodexHookHashes(file string, hooksJSON []byte) (map[string]string, error) {
	return codexHookHashes(file, hooksJSON, false)
}

// codexHookHashes is CodexHookHashes, with own for Tree Ring's groups only
// (each key keeps the group's index in the whole file; the user's events
// Tree Ring has no key for are theirs and skipped).
func codexHookHashes(file string, hooksJSON []byte, own bool) (map[string]string, error) {
	var doc struct {
		Hooks map[string][]map[string]any `json:"hooks"`
	}
	dec := json.NewDecoder(bytes.NewReader(hooksJSON))
	dec.UseNumber() // timeouts hash as written
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("hooks.json: %w", err)
	}
	out := map[string]string{}
	for event, groups := range doc.Hooks {
		name, ok := codexEventKeys[event]
		switch {
		case !ok && own:
			continue
		case !ok:
			return nil, fmt.Errorf("hooks.json: event %q has no Codex hook key", event)
		}
		for gi, g := range groups {
			if own && !codexHookSettings.claims(g) {
				continue
			}
			handlers, _ := g["hooks"].([]any)
			for hi, h := range handlers {
				hm, _ := h.(map[string]any)
				entry := map[string]any{"async": false}
				for _, k := range []string{"type", "command", "timeout", "statusMessage", "additionalContextLimit"} {
					if v, ok := hm[k]; ok {
						entry[k] = v
					}
				}
				group := map[string]any{"event_name": name, "hooks": []any{entry}}
				if m, ok := g["matcher"]; ok {
					group["matcher"] = m
				}
				sum := sha256.Sum256(compactJSON(group))
				out[fmt.Sprintf("%s:%s:%d:%d", file, name, gi, hi)] = "sha256:" + hex.EncodeToString(sum[:])
			}
		}
	}
	return out, nil
}

// codexTrust is Codex's TrustGate.Inspect: both layers for Tree Ring's
// hooks as they sit in .codex/hooks.json on disk (q.Root; status checks the
// file against the record before it asks): the file Tree Ring created, or
// the user's own with Tree Ring's groups merged in, at whatever position.
func codexTrust(q TrustQuery) Trust {
	home, _ := codexHome(q.Getenv)
	if home == "" {
		return Trust{Diagnostic: DiagCodexHomeUnknown,
			Next: "Neither CODEX_HOME nor HOME is set, so Tree Ring cannot read Codex's trust settings; run status with the environment Codex runs in."}
	}
	data, exists, err := readHostFile(filepath.Join(home, "config.toml"), codexconfig.MaxBytes)
	var tl *TooLargeError
	switch {
	case errors.As(err, &tl):
		return codexUnreadable(DiagCodexConfigMalformed, codexconfig.ErrTooLarge)
	case err != nil:
		return codexUnreadable(DiagCodexConfigRead, err)
	}
	var cfg codexconfig.Config
	if exists {
		if cfg, err = codexconfig.Parse(data); err != nil {
			return codexUnreadable(DiagCodexConfigMalformed, err)
		}
	}
	return codexVerdict(q.Project, cfg, codexOwnHashes(q))
}

// codexHome is Codex's configuration directory ($CODEX_HOME, else
// ~/.codex; "" when neither variable is set) and how a step names it.
func codexHome(getenv func(string) string) (dir, shown string) {
	if home := getenv("CODEX_HOME"); home != "" {
		return home, "$CODEX_HOME"
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".codex"), "~/.codex"
	}
	return "", ""
}

// codexOwnHashes are the hook keys and hashes of Tree Ring's groups in the
// project's .codex/hooks.json; those of CodexHooksJSON when there is no
// root to read or the file no longer parses (status has just matched it
// against the record, so only a concurrent edit gets there).
func codexOwnHashes(q TrustQuery) map[string]string {
	file := filepath.Join(q.Project, codexHooks)
	if q.Root != nil {
		if e, err := q.Root.ReadFile(codexHooks, MaxBridgeFileBytes); err == nil && e.Exists {
			if h, err := codexHookHashes(file, e.Data, true); err == nil && len(h) > 0 {
				return h
			}
		}
	}
	hashes, err := CodexHookHashes(file, CodexHooksJSON())
	if err != nil {
		panic(err) // our own constant document: caught by every test
	}
	return hashes
}

func codexUnreadable(code string, err error) Trust {
	return Trust{Diagnostic: code, Next: "Codex's configuration " + codexConfigPath + " cannot be read (" + err.Error() +
		"), so whether Codex runs this project's hooks is unknown. Repair it (`codex` reports its own error), then check `tree-ring integrations status` again."}
}

// codexVerdict decides from the parsed configuration.
func codexVerdict(project string, cfg codexconfig.Config, want map[string]string) Trust {
	level := cfg.Projects[project]
	var missing []string
	for k, h := range want {
		if cfg.HookHashes[k] != h {
			missing = append(missing, k)
		}
	}
	slices.Sort(missing)
	if level == codexconfig.Trusted && len(missing) == 0 {
		return Trust{Granted: true}
	}
	var b strings.Builder
	b.WriteString("Codex runs no project hook until you trust ")
	switch {
	case level != codexconfig.Trusted && len(missing) > 0:
		b.WriteString("this project and Tree Ring's hooks")
	case level != codexconfig.Trusted:
		b.WriteString("this project")
	default:
		b.WriteString("Tree Ring's hooks")
	}
	b.WriteString(" (Tree Ring never changes Codex's settings). ")
	switch {
	case level == codexconfig.Untrusted:
		b.WriteString("This project is marked untrusted in " + codexConfigPath + ", which `codex exec --trust` does not override: change its trust_level to \"trusted\" by hand. ")
	case level != codexconfig.Trusted:
		b.WriteString("Trust the project: run `codex exec --trust` once in it, or accept the trust prompt of an interactive `codex` session. ")
	}
	if len(missing) > 0 {
		which := "the hook"
		if len(missing) > 1 {
			which = fmt.Sprintf("the %d hooks", len(missing))
		}
		fmt.Fprintf(&b, "Trust %s: review with `/hooks` in an interactive `codex` session (`codex exec` has no review screen and skips untrusted hooks silently). ", which)
	}
	b.WriteString("Or add these lines to " + codexConfigPath + ":\n")
	var lines []string
	if level != codexconfig.Trusted {
		lines = append(lines, "[projects."+strconv.Quote(project)+"]\ntrust_level = \"trusted\"")
	}
	for _, k := range missing {
		lines = append(lines, "[hooks.state."+strconv.Quote(k)+"]\ntrusted_hash = "+strconv.Quote(want[k]))
	}
	b.WriteString(strings.Join(lines, "\n\n"))
	b.WriteString("\nThen open a new Codex session.")
	return Trust{Next: b.String()}
}
