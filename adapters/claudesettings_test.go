package adapters

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// merged appends Tree Ring's snippet entries to a user's settings document,
// as a user following the next step would.
func merged(t *testing.T, user string, edit func(map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(user), &doc); err != nil {
		t.Fatal(err)
	}
	var snip struct{ Hooks map[string][]any }
	if err := json.Unmarshal(ClaudeSettingsSnippet(), &snip); err != nil {
		t.Fatal(err)
	}
	hooks, _ := doc["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
		doc["hooks"] = hooks
	}
	for ev, entries := range snip.Hooks {
		prev, _ := hooks[ev].([]any)
		hooks[ev] = append(prev, entries...)
	}
	if edit != nil {
		edit(hooks)
	}
	out, err := json.MarshalIndent(doc, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const userSettings = `{"permissions":{"allow":["Bash(ls)"]},"hooks":{"Stop":[{"hooks":[{"type":"command","command":"echo done"}]}]}}`

func TestInspectClaudeSettings(t *testing.T) {
	cases := []struct {
		name string
		data []byte
		want SettingsStatus
	}{
		{"created by Tree Ring", ClaudeSettingsSnippet(), SettingsExact},
		{"user's own hooks only", []byte(userSettings), SettingsNoEntries},
		{"no hooks key", []byte(`{"model":"x"}`), SettingsNoEntries},
		{"user merged the snippet", merged(t, userSettings, nil), SettingsExact},
		{"one entry edited", merged(t, userSettings, func(h map[string]any) {
			e := h["Stop"].([]any)[1].(map[string]any)["hooks"].([]any)[0].(map[string]any)
			e["timeout"] = 30
		}), SettingsConflict},
		{"one event missing", merged(t, userSettings, func(h map[string]any) { delete(h, "SubagentStop") }), SettingsConflict},
		{"duplicated entry", merged(t, userSettings, func(h map[string]any) {
			h["SessionStart"] = append(h["SessionStart"].([]any), h["SessionStart"].([]any)[0])
		}), SettingsConflict},
		{"claimed under another event", merged(t, userSettings, func(h map[string]any) { h["UserPromptSubmit"] = h["Stop"] }), SettingsConflict},
		{"legacy tree-ring command", []byte(`{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"tree-ring --root .tree-ring integrations hook --harness claude-code --input-json-stdin"}]}]}}`), SettingsConflict},
		{"timeout 10.0 is not 10", bytes.Replace(ClaudeSettingsSnippet(), []byte(`"timeout": 10`), []byte(`"timeout": 10.0`), 1), SettingsConflict},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := InspectClaudeSettings(c.data)
			if err != nil || got != c.want {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func TestInspectClaudeSettingsMalformed(t *testing.T) {
	for name, data := range map[string]string{
		"invalid JSON":      `{"hooks": {`,
		"trailing data":     `{} {}`,
		"duplicate key":     `{"hooks":{},"hooks":{}}`,
		"array document":    `[]`,
		"hooks not object":  `{"hooks":[]}`,
		"event not array":   `{"hooks":{"Stop":{}}}`,
		"too deep":          strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40),
		"larger than bound": `{"x":"` + strings.Repeat("a", MaxBridgeFileBytes) + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := InspectClaudeSettings([]byte(data))
			var me *MalformedError
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want *MalformedError", err)
			}
			if strings.Contains(err.Error(), "aaaa") {
				t.Fatal("error message quotes file content")
			}
		})
	}
}

func TestClaudeDigestInput(t *testing.T) {
	var list [][2]json.RawMessage
	if err := json.Unmarshal(ClaudeHandlerDigestInput(), &list); err != nil || len(list) != 4 {
		t.Fatalf("digest input is not a 4-element list: %v", err)
	}
	var ev string
	_ = json.Unmarshal(list[2][0], &ev)
	if ev != "Stop" || bytes.Contains(ClaudeHandlerDigestInput(), []byte("\n")) || bytes.Contains(ClaudeHandlerDigestInput(), []byte(`\u0026`)) {
		t.Fatalf("digest input not the compact, unescaped handler list: %s", ClaudeHandlerDigestInput())
	}
}

// FuzzInspectClaudeSettings: never panics, never modifies the input, and a
// result is either a status or a *MalformedError.
func FuzzInspectClaudeSettings(f *testing.F) {
	f.Add(ClaudeSettingsSnippet())
	f.Add([]byte(userSettings))
	f.Add([]byte(`{"hooks":{"Stop":[{"hooks":[{"description":"Tree Ring Memory managed capture checkpoint v4"}]}]}}`))
	f.Add([]byte(`{"hooks":{"Stop":{}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := bytes.Clone(data)
		st, err := InspectClaudeSettings(data)
		if !bytes.Equal(orig, data) {
			t.Fatal("input modified")
		}
		var me *MalformedError
		if err != nil && !errors.As(err, &me) {
			t.Fatalf("untyped error %v", err)
		}
		if err == nil && (st < SettingsNoEntries || st > SettingsConflict) {
			t.Fatalf("status %d", st)
		}
	})
}
