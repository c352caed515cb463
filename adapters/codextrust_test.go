//go:build unix

package adapters

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func trustLines(project string, trustProject bool, hooks []string) string {
	want, err := CodexHookHashes(filepath.Join(project, codexHooks), CodexHooksJSON())
	if err != nil {
		panic(err)
	}
	var b strings.Builder
	b.WriteString("model = \"m\"\napproval_policy = \"never\"\n")
	if trustProject {
		fmt.Fprintf(&b, "[projects.%q]\ntrust_level = \"trusted\"\n", project)
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, h := range hooks {
			if strings.Contains(k, ":"+h+":") {
				fmt.Fprintf(&b, "[hooks.state.%q]\ntrusted_hash = %q\n", k, want[k])
			}
		}
	}
	return b.String()
}

var allCodexHooks = []string{"session_start", "subagent_start", "stop", "subagent_stop"}

func TestCodexTrust(t *testing.T) {
	const project = "/srv/my proj"
	cases := []struct {
		name    string
		config  string
		granted bool
		diag    string
		next    []string // substrings of the next step
		absent  []string // substrings it must not hold
	}{
		{name: "no config", next: []string{"this project and Tree Ring's hooks", "`codex exec --trust` once", "`/hooks`", "Trust the 4 hooks",
			`[projects."/srv/my proj"]` + "\ntrust_level = \"trusted\"", `[hooks.state."/srv/my proj/.codex/hooks.json:session_start:0:0"]`, "Then open a new Codex session."}},
		{name: "untrusted project, trusted hooks", config: trustLines(project, false, allCodexHooks),
			next: []string{"trust this project (", "`codex exec --trust` once", `[projects."/srv/my proj"]`}, absent: []string{"[hooks.state", "/hooks"}},
		{name: "trusted project, untrusted hooks", config: trustLines(project, true, nil),
			next: []string{"trust Tree Ring's hooks", "`/hooks`", "no review screen", "Trust the 4 hooks"}, absent: []string{"[projects.", "--trust"}},
		{name: "trusted project, one hook untrusted", config: trustLines(project, true, []string{"session_start", "subagent_start", "stop"}),
			next: []string{"Trust the hook:", `hooks.json:subagent_stop:0:0"]`}, absent: []string{"session_start:0:0"}},
		{name: "a stale hook hash", config: strings.Replace(trustLines(project, true, allCodexHooks), `trusted_hash = "sha256:`, `trusted_hash = "sha256:0`, 1),
			next: []string{"Trust the hook:"}},
		{name: "both layers", config: trustLines(project, true, allCodexHooks), granted: true},
		{name: "another project trusted", config: strings.ReplaceAll(trustLines(project, true, allCodexHooks), `"/srv/my proj"]`, `"/srv/my proj2"]`),
			next: []string{`[projects."/srv/my proj"]`}},
		{name: "explicitly untrusted", config: strings.Replace(trustLines(project, true, allCodexHooks), `trust_level = "trusted"`, `trust_level = "untrusted"`, 1),
			next: []string{"marked untrusted", "does not override", "by hand"}, absent: []string{"run `codex exec --trust` once"}},
		{name: "malformed", config: "[projects.\"/srv/my proj\"\ntrust_level = \"trusted\"\n", diag: DiagCodexConfigMalformed,
			next: []string{"cannot be read (not valid TOML at line 1, column 25", "is unknown"}},
		{name: "wrong type", config: "[projects.\"/srv/my proj\"]\ntrust_level = true\n", diag: DiagCodexConfigMalformed, next: []string{"wrong type"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := codexSettings(t, project, c.config)
			got := codexTrust(q)
			if got.Granted != c.granted || got.Diagnostic != c.diag {
				t.Fatalf("granted %v diagnostic %q, want %v %q: %s", got.Granted, got.Diagnostic, c.granted, c.diag, got.Next)
			}
			if c.granted != (got.Next == "") {
				t.Fatalf("next %q", got.Next)
			}
			for _, s := range c.next {
				if !strings.Contains(got.Next, s) {
					t.Errorf("next lacks %q:\n%s", s, got.Next)
				}
			}
			for _, s := range c.absent {
				if strings.Contains(got.Next, s) {
					t.Errorf("next holds %q:\n%s", s, got.Next)
				}
			}
			if strings.Contains(got.Next, "CANARY") {
				t.Fatalf("the environment's value is echoed: %s", got.Next)
			}
		})
	}
	// The lines a next step prints are what Codex needs: pasted into an
	// empty config, they grant trust.
	q := codexSettings(t, project, "")
	lines := codexTrust(q).Next
	lines = lines[strings.Index(lines, "\n")+1 : strings.LastIndex(lines, "\n")]
	if got := codexTrust(codexSettings(t, project, lines)); !got.Granted {
		t.Fatalf("the printed lines do not grant trust: %+v\n%s", got, lines)
	}
}

func TestCodexTrustSettingsLocation(t *testing.T) {
	const project = "/p"
	dir := t.TempDir()
	codexHome := filepath.Join(dir, "home", ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(trustLines(project, true, allCodexHooks)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		name    string
		getenv  func(string) string
		granted bool
		diag    string
	}{
		{"HOME/.codex by default", env("HOME", filepath.Join(dir, "home")), true, ""},
		{"CODEX_HOME wins over HOME", env("HOME", filepath.Join(dir, "home"), "CODEX_HOME", dir), false, ""},
		{"neither set", env(), false, DiagCodexHomeUnknown},
		{"config.toml is a directory", env("CODEX_HOME", dir+"/home"), false, DiagCodexConfigRead},
		{"config.toml is a fifo", env("CODEX_HOME", dir+"/fifo"), false, DiagCodexConfigRead},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "config.toml is a fifo" {
				if err := os.MkdirAll(filepath.Join(dir, "fifo"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Mkfifo(filepath.Join(dir, "fifo", "config.toml"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if c.name == "config.toml is a directory" {
				if err := os.MkdirAll(filepath.Join(dir, "home", "config.toml"), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			got := codexTrust(TrustQuery{Project: project, Getenv: c.getenv})
			if got.Granted != c.granted || got.Diagnostic != c.diag {
				t.Fatalf("got %+v", got)
			}
			if strings.Contains(got.Next, dir) {
				t.Fatalf("a path from the environment is echoed: %s", got.Next)
			}
		})
	}
}

// TestCodexHookHashesGolden pins the hook keys and trusted_hash values of
// the hooks.json Tree Ring publishes (the acceptance suite checks the
// formula against Codex 0.169's own hooks/list; a change here means the
// user must trust the hooks again, and the adapter version moves).
func TestCodexHookHashesGolden(t *testing.T) {
	h, err := CodexHookHashes("/srv/p/.codex/hooks.json", CodexHooksJSON())
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %s\n", k, h[k])
	}
	goldenFile(t, filepath.Join(repo, "testdata", "adapters", "codex", "hook-trust.golden.txt"), []byte(b.String()))
	if _, err := CodexHookHashes("/p", []byte(`{"hooks":{"PreToolUse":[]}}`)); err == nil {
		t.Fatal("an event without a Codex hook key was accepted")
	}
}
