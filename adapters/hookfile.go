package adapters

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// maxHookFileBytes bounds a hook definition file read back.
const maxHookFileBytes = 1 << 20

// ForeignHookCommands lists the commands a JSON hook definition file (the
// bridge file of Claude Code, Codex and Gemini CLI: a "hooks" object of
// events, each a list of matcher groups holding "hooks" handlers) would run
// besides harness's Tree Ring hook command (HookCommand), sorted. Before a store
// here recorded a bridge, a clone's hook file that runs anything else is
// nobody's reviewed bridge (issue 24 finding 10). A file that does not
// decode as such is one entry, "(unreadable)": nothing vouches for it.
func ForeignHookCommands(data []byte, harness string) []string {
	var doc struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(stripJSONComments(data), &doc); err != nil {
		return []string{"(unreadable)"}
	}
	ours := HookCommand(harness)
	var out []string
	for _, groups := range doc.Hooks {
		for _, g := range groups {
			for _, h := range g.Hooks {
				if h.Command != ours {
					out = append(out, h.Command)
				}
			}
		}
	}
	slices.Sort(out) // the events are a map: one order for the same file
	return out
}

// HookFileForeign reports whether the hook file at path (the record's
// bridge path, when it is a JSON hook file) runs a command other than
// harness's Tree Ring hook (ForeignHookCommands). A missing file is not
// foreign (the bridge check reports it).
func HookFileForeign(root *ProjectRoot, path, harness string) (bool, error) {
	e, err := root.ReadFile(path, maxHookFileBytes)
	var tl *TooLargeError
	switch {
	case errors.As(err, &tl):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("read %s: %w", path, err)
	case !e.Exists:
		return false, nil
	}
	return len(ForeignHookCommands(e.Data, harness)) > 0, nil
}

// JSONHookFile reports whether a's bridge file is a JSON hook definition
// (Claude Code's and Gemini CLI's settings, Codex's hooks.json).
func (a *Adapter) JSONHookFile() bool {
	if !a.RunsProgram() || !a.Publishes() {
		return false
	}
	m := a.material(Context{})
	for _, f := range m.Files {
		if f.Path == m.BridgePath {
			return len(ForeignHookCommands(f.Data, a.ID)) == 0
		}
	}
	for _, b := range m.Blocks {
		if b.Path == m.BridgePath {
			return len(ForeignHookCommands(b.Whole, a.ID)) == 0
		}
	}
	return false
}
