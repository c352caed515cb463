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
// .claude/settings.json.
type SettingsStatus int

// Settings statuses.
const (
	// SettingsNoEntries: no Tree Ring handler anywhere; adding ours would
	// mutate the user's file.
	SettingsNoEntries SettingsStatus = iota + 1
	// SettingsExact: each of the four events holds exactly one Tree Ring
	// entry, equal to ours, and no Tree Ring handler appears elsewhere.
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

// InspectClaudeSettings classifies an existing settings document. It reads
// only the hooks object; every other key is the user's and is ignored.
// Malformed input (invalid JSON, duplicate keys, nesting deeper than
// strictjson.MaxDepth, a non-object document or hooks, a non-array event) is a
// *MalformedError. data is never modified.
func InspectClaudeSettings(data []byte) (SettingsStatus, error) {
	bad := func(format string, a ...any) (SettingsStatus, error) {
		return 0, &MalformedError{Path: claudeSettings, Reason: fmt.Sprintf(format, a...)}
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
	for i, e := range claudeEvents {
		ours[e.Event] = i
	}
	claimedTotal, exact := 0, 0
	for event, v := range hooks {
		entries, ok := v.([]any)
		if !ok {
			return bad("hooks.%s is not an array", event)
		}
		claimed, matching := 0, 0
		for _, entry := range entries {
			if !claimsEntry(entry) {
				continue
			}
			claimed++
			if i, isOurs := ours[event]; isOurs && reflect.DeepEqual(entry, decodeNumbers(compactJSON(claudeEntryFor(i)))) {
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
	case exact == len(claudeEvents) && claimedTotal == len(claudeEvents):
		return SettingsExact, nil
	default:
		return SettingsConflict, nil
	}
}

// claimsEntry reports whether a matcher group holds a handler Tree Ring
// would call its own: a managed description (any adapter version) or a
// command that runs tree-ring for claude-code.
func claimsEntry(entry any) bool {
	m, ok := entry.(map[string]any)
	if !ok {
		return false
	}
	hs, ok := m["hooks"].([]any)
	if !ok {
		return false
	}
	for _, h := range hs {
		hm, ok := h.(map[string]any)
		if !ok {
			continue
		}
		if d, ok := hm["description"].(string); ok && strings.HasPrefix(d, "Tree Ring Memory managed") {
			return true
		}
		if c, ok := hm["command"].(string); ok && strings.Contains(c, "tree-ring") && strings.Contains(c, "--harness claude-code") {
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
