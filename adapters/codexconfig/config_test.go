package codexconfig

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name     string
		in       string
		projects map[string]string
		hooks    map[string]string
		err      string // a substring of the error; "" means none
		hooks0   string // the features switch: "", "on" or "off"
	}{
		{name: "empty", in: "", projects: map[string]string{}, hooks: map[string]string{}},
		{name: "both layers among Codex's other keys",
			in: "model = \"m\"\n[model_providers.mock]\nbase_url = \"http://x\"\n\n[projects.\"/p\"]\ntrust_level = \"trusted\"\n\n" +
				"[hooks.state.\"/p/.codex/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:ab\"\nenabled = true\n",
			projects: map[string]string{"/p": "trusted"}, hooks: map[string]string{"/p/.codex/hooks.json:stop:0:0": "sha256:ab"}},
		{name: "inline tables and an untrusted project",
			in:       "projects = { \"/p\" = { trust_level = \"untrusted\" }, \"/q\" = {} }\nhooks = { state = {} }\n",
			projects: map[string]string{"/p": "untrusted", "/q": ""}, hooks: map[string]string{}},
		{name: "a hook entry without a hash", in: "[hooks.state.\"k\"]\nenabled = false\n",
			projects: map[string]string{}, hooks: map[string]string{"k": ""}},
		{name: "syntax error", in: "[projects.\"/home/u/secret\"]\ntrust_level = \n", err: "not valid TOML at line 2"},
		{name: "duplicate key", in: "a = 1\na = 2\n", err: "not valid TOML at line 2"},
		{name: "trust level not a string", in: "[projects.\"/home/u/secret\"]\ntrust_level = 3\n", err: "wrong type"},
		{name: "project not a table", in: "[projects]\n\"/home/u/secret\" = 1\n", err: "wrong type"},
		{name: "projects not a table", in: "projects = 1\n", err: "wrong type"},
		{name: "hash not a string", in: "[hooks.state.\"/home/u/secret\"]\ntrusted_hash = true\n", err: "wrong type"},
		{name: "hooks.state not a table", in: "[hooks]\nstate = 1\n", err: "wrong type"},
		{name: "hooks not a table", in: "hooks = 2\n", err: "wrong type"},
		{name: "trust level a date", in: "[projects.\"/home/u/secret\"]\ntrust_level = 1979-05-27\n", err: "wrong type"},
		{name: "hooks.state an array of tables", in: "[[hooks.state]]\nsecret = 1\n", err: "wrong type"},
		{name: "a syntax error after a wrong type", in: "projects = 1\nsecret = \n", err: "not valid TOML at line 2"},
		{name: "table defined twice", in: "[projects.\"/p\"]\n[projects.\"/p\"]\n", err: "not valid TOML at line 2"},
		// Linear in the input: the previous library took minutes over a
		// 64 KB dotted key (its time grew faster than the square of the key's
		// length).
		{name: "a long dotted key", in: strings.Repeat("a.", 1<<17) + "b = 1\n",
			projects: map[string]string{}, hooks: map[string]string{}},
		{name: "a long dotted table name", in: "[" + strings.Repeat("a.", 1<<17) + "b]\n",
			projects: map[string]string{}, hooks: map[string]string{}},
		{name: "hooks switched off", in: "[features]\nhooks = false\nother = 1\n", projects: map[string]string{}, hooks: map[string]string{}, hooks0: "off"},
		{name: "a dotted features key", in: "features.hooks = true\n", projects: map[string]string{}, hooks: map[string]string{}, hooks0: "on"},
		{name: "the older name", in: "[features]\ncodex_hooks = false\n", projects: map[string]string{}, hooks: map[string]string{}, hooks0: "off"},
		{name: "hooks decides over the older name", in: "[features]\nhooks = true\ncodex_hooks = false\n", projects: map[string]string{}, hooks: map[string]string{}, hooks0: "on"},
		{name: "a string is not a switch", in: "[features]\nhooks = \"false\"\n", err: "wrong type"},
		{name: "features not a table", in: "features = 1\n", err: "wrong type"},
		{name: "not UTF-8", in: "a = \"\xff\"\n", err: "not UTF-8"},
		{name: "too large", in: strings.Repeat("#", MaxBytes+1), err: ErrTooLarge.Error()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse([]byte(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Fatalf("the error quotes the file: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got.Projects, c.projects) || !maps.Equal(got.HookHashes, c.hooks) {
				t.Fatalf("got %v %v, want %v %v", got.Projects, got.HookHashes, c.projects, c.hooks)
			}
			if sw := map[bool]string{true: "on", false: "off"}; got.Hooks == nil && c.hooks0 != "" || got.Hooks != nil && sw[*got.Hooks] != c.hooks0 {
				t.Fatalf("features switch %v, want %q", got.Hooks, c.hooks0)
			}
		})
	}
	if !errors.Is(func() error { _, err := Parse(make([]byte, MaxBytes+1)); return err }(), ErrTooLarge) {
		t.Fatal("oversized input is not ErrTooLarge")
	}
}

// FuzzParse: Parse never panics, refuses what is over the bound, and an
// error never quotes the input (its keys are absolute paths).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "[projects.\"/p\"]\ntrust_level = \"trusted\"\n", "[hooks.state.\"/p/.codex/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:00\"\n",
		"projects = { \"/p\" = { trust_level = 1 } }", "[hooks]\nstate = []", "a = [1, [2, {b = 3}]]", "x = \"\"\"\nml\n\"\"\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "not valid TOML at line ") && err != errNotTOML && err != errWrongType && msg != "not UTF-8" && err != ErrTooLarge {
				t.Fatalf("unexpected error shape: %v", err)
			}
			return
		}
		if len(data) > MaxBytes || c.Projects == nil || c.HookHashes == nil {
			t.Fatalf("accepted %d bytes with %v", len(data), c)
		}
	})
}
