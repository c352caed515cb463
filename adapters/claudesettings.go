package adapters

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/tree-ring/tree-ring/events/strictjson"
)

// MaxBridgeFileBytes bounds every existing file Tree Ring reads to inspect a
// bridge (settings, AGENTS.md, hooks files) and the manifest.
const MaxBridgeFileBytes = 1 << 20

// SettingsStatus classifies Tree Ring's handler entries in an existing
// hook settings file (.claude/settings.json, .gemini/settings.json).
type SettingsStatus int

// Settings statuses.
const (
	// SettingsNoEntries: no Tree Ring handler anywhere; adding ours would
	// mutate the user's file.
	SettingsNoEntries SettingsStatus = iota + 1
	// SettingsExact: each of the adapter's events holds exactly one Tree
	// Ring entry, equal to ours, and no Tree Ring handler appears elsewhere.
	SettingsExact
	// SettingsConflict: Tree Ring handlers that are partial, duplicated,
	// customized, from another adapter version or under other events.
	SettingsConflict
)

// MalformedError reports an existing file Tree Ring cannot read safely. It
// names a byte offset and a reason, never the file's content.
type MalformedError struct {
	Path   string
	Reason string
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("%s is malformed: %s; Tree Ring never rewrites it", e.Path, e.Reason)
}

// hookSettings describes the handler entries Tree Ring owns in a harness's
// JSON settings file (event -> matcher groups -> handlers): Claude Code's
// .claude/settings.json, Gemini CLI's .gemini/settings.json and Codex's
// .codex/hooks.json share the shape and differ in path, events, entry bytes
// and the harness id in the command.
type hookSettings struct {
	path    string
	harness string   // the --harness value a Tree Ring command names
	events  []string // the events holding exactly one Tree Ring entry each
	entry   func(i int) any
}

// settingsOf returns the hook-settings description of a block format, or
// nil when the format is not a settings file.
func settingsOf(f BlockFormat) *hookSettings {
	switch f {
	case ClaudeSettings:
		return &claudeHookSettings
	case GeminiSettings:
		return &geminiHookSettings
	case CodexHooks:
		return &codexHookSettings
	}
	return nil
}

var claudeHookSettings = hookSettings{
	path: claudeSettings, harness: "claude-code", events: claudeEventNames(),
	entry: func(i int) any { return claudeEntryFor(i) },
}

func claudeEventNames() []string {
	out := make([]string, len(claudeEvents))
	for i, e := range claudeEvents {
		out[i] = e.Event
	}
	return out
}

// InspectClaudeSettings classifies an existing .claude/settings.json
// (inspect, for Claude Code's entries).
func InspectClaudeSettings(data []byte) (SettingsStatus, error) {
	return claudeHookSettings.inspect(data)
}

// inspect classifies an existing settings document. It reads only the
// hooks object; every other key is the user's and is ignored. Malformed
// input (invalid JSON, duplicate keys, nesting deeper than
// strictjson.MaxDepth, a non-object document or hooks, a non-array event) is a
// *MalformedError. data is never modified.
func (hs *hookSettings) inspect(data []byte) (SettingsStatus, error) {
	bad := func(format string, a ...any) (SettingsStatus, error) {
		return 0, &MalformedError{Path: hs.path, Reason: fmt.Sprintf(format, a...)}
	}
	if len(data) > MaxBridgeFileBytes {
		return bad("larger than %d bytes", MaxBridgeFileBytes)
	}
	var raw json.RawMessage
	if err := strictjson.Unmarshal(data, &raw); err != nil {
		var syn *strictjson.SyntaxError
		var dup *strictjson.DuplicateKeyError
		var deep *strictjson.DepthError
		switch {
		case errors.As(err, &syn):
			return bad("invalid JSON at byte %d", syn.Offset)
		case errors.As(err, &dup):
			return bad("duplicate key %q", dup.Key)
		case errors.As(err, &deep):
			return bad("nesting deeper than %d", deep.Max)
		default:
			return bad("invalid JSON")
		}
	}
	doc, ok := decodeNumbers(raw).(map[string]any)
	if !ok {
		return bad("the document is not a JSON object")
	}
	hv, present := doc["hooks"]
	if !present {
		return SettingsNoEntries, nil
	}
	hooks, ok := hv.(map[string]any)
	if !ok {
		return bad("hooks is not an object")
	}
	ours := map[string]int{}
	for i, e := range hs.events {
		ours[e] = i
	}
	claimedTotal, exact := 0, 0
	for event, v := range hooks {
		entries, ok := v.([]any)
		if !ok {
			return bad("hooks.%s is not an array", event)
		}
		claimed, matching := 0, 0
		for _, entry := range entries {
			if !hs.claims(entry) {
				continue
			}
			claimed++
			if i, isOurs := ours[event]; isOurs && reflect.DeepEqual(entry, decodeNumbers(compactJSON(hs.entry(i)))) {
				matching++
			}
		}
		claimedTotal += claimed
		if claimed == 1 && matching == 1 {
			exact++
		}
	}
	switch {
	case claimedTotal == 0:
		return SettingsNoEntries, nil
	case exact == len(hs.events) && claimedTotal == len(hs.events):
		return SettingsExact, nil
	default:
		return SettingsConflict, nil
	}
}

// digestInput is the byte string whose SHA-256 the manifest records for
// the settings block: the compact JSON of the handler list
// [[event,{entry}],...] in event order.
func (hs *hookSettings) digestInput() []byte {
	list := make([][2]any, len(hs.events))
	for i, e := range hs.events {
		list[i] = [2]any{e, hs.entry(i)}
	}
	return compactJSON(list)
}

// claims reports whether a matcher group holds a handler Tree Ring would
// call its own: a managed description (any adapter version) or a command
// that runs tree-ring for this harness.
func (hs *hookSettings) claims(entry any) bool {
	m, ok := entry.(map[string]any)
	if !ok {
		return false
	}
	handlers, ok := m["hooks"].([]any)
	if !ok {
		return false
	}
	for _, h := range handlers {
		hm, ok := h.(map[string]any)
		if !ok {
			continue
		}
		if d, ok := hm["description"].(string); ok && strings.HasPrefix(d, "Tree Ring Memory managed") {
			return true
		}
		if c, ok := hm["command"].(string); ok && strings.Contains(c, "tree-ring") && strings.Contains(c, "--harness "+hs.harness) {
			return true
		}
	}
	return false
}

// decodeNumbers decodes JSON already known to be valid, keeping numbers as
// json.Number so that 10 and 10.0 stay distinct.
func decodeNumbers(data []byte) any {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	return v
}
