package adapters

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestGeminiTrustFor(t *testing.T) {
	id := func(p string) string { return p }
	const project = "/home/u/work/proj"
	cases := []struct {
		name, doc string
		want      TrustDecision
	}{
		{"the folder", `{"/home/u/work/proj":"TRUST_FOLDER"}`, Trusted},
		{"a parent folder", `{"/home/u/work":"TRUST_FOLDER"}`, Trusted},
		{"TRUST_PARENT of a sibling", `{"/home/u/work/other":"TRUST_PARENT"}`, Trusted},
		{"TRUST_PARENT of the project itself trusts its parent only", `{"/home/u/work/proj/sub":"TRUST_PARENT"}`, Trusted},
		{"a sibling folder", `{"/home/u/work/proj2":"TRUST_FOLDER"}`, TrustUnknown},
		{"a subfolder only", `{"/home/u/work/proj/sub":"TRUST_FOLDER"}`, TrustUnknown},
		{"distrusted", `{"/home/u/work/proj":"DO_NOT_TRUST"}`, Untrusted},
		{"the longer rule wins: distrust inside trust", `{"/home/u":"TRUST_FOLDER","/home/u/work/proj":"DO_NOT_TRUST"}`, Untrusted},
		{"the longer rule wins: trust inside distrust", `{"/home/u":"DO_NOT_TRUST","/home/u/work":"TRUST_FOLDER"}`, Trusted},
		{"unknown levels are ignored", `{"/home/u/work/proj":"MAYBE","/home/u":"TRUST_FOLDER"}`, Trusted},
		{"a non-string level is ignored", `{"/home/u/work/proj":1}`, TrustUnknown},
		{"a relative rule is ignored", `{"proj":"TRUST_FOLDER"}`, TrustUnknown},
		{"comments are stripped", "{\n// mine\n\"/home/u/work/proj\": /* yes */ \"TRUST_FOLDER\"\n}", Trusted},
		{"a // inside a string is kept", `{"/home/u/work/proj//x":"TRUST_FOLDER"}`, TrustUnknown},
		{"empty", `{}`, TrustUnknown},
		{"not an object", `["/home/u/work/proj"]`, TrustUnknown},
		{"not JSON", `{"/home/u/work/proj":`, TrustUnknown},
		{"the root trusts everything", `{"/":"TRUST_FOLDER"}`, Trusted},
	}
	for _, c := range cases {
		if got := GeminiTrustFor([]byte(c.doc), project, id); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
	// Rule paths resolve through symlinks, as Gemini's realpath does.
	if got := GeminiTrustFor([]byte(`{"/link":"TRUST_FOLDER"}`), project, func(p string) string {
		if p == "/link" {
			return "/home/u/work"
		}
		return p
	}); got != Trusted {
		t.Errorf("symlinked rule: %d", got)
	}
}

func TestGeminiFolderTrustLocatesTheFile(t *testing.T) {
	dir := t.TempDir()
	project := filepath.Join(dir, "proj")
	write := func(path, doc string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	trusting := `{"` + project + `":"TRUST_FOLDER"}`
	home, geminiHome, explicit := filepath.Join(dir, "home"), filepath.Join(dir, "ghome"), filepath.Join(dir, "tf.json")
	write(filepath.Join(home, ".gemini", "trustedFolders.json"), trusting)
	write(filepath.Join(geminiHome, ".gemini", "trustedFolders.json"), `{}`)
	write(explicit, `{"`+project+`":"DO_NOT_TRUST"}`)
	write(filepath.Join(dir, "off", ".gemini", "settings.json"), `{"security": {"folderTrust": {"enabled": false}}} // mine`)
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for name, c := range map[string]struct {
		env  map[string]string
		want TrustDecision
	}{
		"HOME":                            {map[string]string{"HOME": home}, Trusted},
		"GEMINI_CLI_HOME overrides HOME":  {map[string]string{"HOME": home, "GEMINI_CLI_HOME": geminiHome}, TrustUnknown},
		"the explicit path overrides all": {map[string]string{"HOME": home, "GEMINI_CLI_TRUSTED_FOLDERS_PATH": explicit}, Untrusted},
		"no home":                         {map[string]string{}, TrustUnknown},
		"no file":                         {map[string]string{"HOME": dir}, TrustUnknown},
		"folder trust switched off":       {map[string]string{"HOME": filepath.Join(dir, "off")}, Trusted},
	} {
		if got := geminiFolderTrust(env(c.env), project); got != c.want {
			t.Errorf("%s: got %d, want %d", name, got, c.want)
		}
	}
	big := bytes.Repeat([]byte(" "), maxTrustFileBytes+1)
	write(filepath.Join(home, ".gemini", "trustedFolders.json"), string(big))
	if got := geminiFolderTrust(env(map[string]string{"HOME": home}), project); got != TrustUnknown {
		t.Errorf("oversized file: %d", got)
	}
}

// FuzzGeminiTrustFor: never panics, is deterministic, and only a document
// that decodes (comments stripped) to an object can trust anything.
func FuzzGeminiTrustFor(f *testing.F) {
	for _, s := range []string{`{"/p":"TRUST_FOLDER"}`, `{"/":"TRUST_PARENT"}`, "{/* c */\"/p\":\"DO_NOT_TRUST\"}", `{"/p//":"TRUST_FOLDER"} // x`, `"\"/*"`, `{`} {
		f.Add([]byte(s), "/p")
	}
	f.Fuzz(func(t *testing.T, doc []byte, project string) {
		orig := bytes.Clone(doc)
		d := GeminiTrustFor(doc, project, func(p string) string { return p })
		if !bytes.Equal(doc, orig) {
			t.Fatal("input modified")
		}
		if d != GeminiTrustFor(doc, project, func(p string) string { return p }) {
			t.Fatal("not deterministic")
		}
		var m map[string]json.RawMessage
		if d != TrustUnknown && json.Unmarshal(stripJSONComments(doc), &m) != nil {
			t.Fatalf("decided %d on a document that is not an object", d)
		}
	})
}

func TestGeminiFolderTrustEnabled(t *testing.T) {
	for doc, want := range map[string]bool{
		`{}`: true, `{"security":{"auth":{"selectedType":"gemini-api-key"}}}`: true,
		`{"security":{"folderTrust":{"enabled":true}}}`: true, `{"security":{"folderTrust":{"enabled":false}}}`: false,
		"{/* off */ \"security\":{\"folderTrust\":{\"enabled\":false}}}": false,
		`{"security":{"folderTrust":{"enabled":"no"}}}`:                  true, `not json`: true,
	} {
		if got := GeminiFolderTrustEnabled([]byte(doc)); got != want {
			t.Errorf("%s: %v, want %v", doc, got, want)
		}
	}
}

func TestInspectGeminiSettings(t *testing.T) {
	var snip map[string]any
	if err := json.Unmarshal(GeminiSettingsSnippet(), &snip); err != nil {
		t.Fatal(err)
	}
	user := map[string]any{"general": map[string]any{"vimMode": true}, "hooks": map[string]any{
		"AfterAgent": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "echo done"}}}},
	}}
	withOurs := func(edit func(h map[string]any)) []byte {
		var doc map[string]any
		b, _ := json.Marshal(user)
		_ = json.Unmarshal(b, &doc)
		h := doc["hooks"].(map[string]any)
		for ev, es := range snip["hooks"].(map[string]any) {
			prev, _ := h[ev].([]any)
			h[ev] = append(prev, es.([]any)...)
		}
		if edit != nil {
			edit(h)
		}
		out, _ := json.MarshalIndent(doc, "", "\t")
		return out
	}
	userOnly, _ := json.Marshal(user)
	cases := []struct {
		name string
		data []byte
		want SettingsStatus
	}{
		{"created by Tree Ring", GeminiSettingsSnippet(), SettingsExact},
		{"the user's own hooks only", userOnly, SettingsNoEntries},
		{"merged by hand", withOurs(nil), SettingsExact},
		{"timeout edited (seconds instead of milliseconds)", withOurs(func(h map[string]any) {
			h["SessionStart"].([]any)[0].(map[string]any)["hooks"].([]any)[0].(map[string]any)["timeout"] = 10
		}), SettingsConflict},
		{"AfterAgent missing", withOurs(func(h map[string]any) { delete(h, "AfterAgent") }), SettingsConflict},
		{"Claude Code's entries are not Gemini's", ClaudeSettingsSnippet(), SettingsConflict},
	}
	for _, c := range cases {
		got, err := geminiHookSettings.inspect(c.data)
		if err != nil || got != c.want {
			t.Errorf("%s: got %d, %v; want %d", c.name, got, err, c.want)
		}
	}
	if _, err := geminiHookSettings.inspect([]byte(`{"hooks":{"SessionStart":{}}}`)); err == nil {
		t.Error("a non-array event was accepted")
	}
}
