package adapters

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events"
)

// mergeCodexHooks returns the user's hooks.json document with Tree Ring's
// groups (CodexHooksSnippet) appended to each event, as a user following
// the review's step would.
func mergeCodexHooks(t *testing.T, user string) []byte {
	t.Helper()
	var doc, snip map[string]any
	if err := json.Unmarshal([]byte(user), &doc); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(CodexHooksSnippet(), &snip); err != nil {
		t.Fatal(err)
	}
	hooks, _ := doc["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
		doc["hooks"] = hooks
	}
	for ev, groups := range snip["hooks"].(map[string]any) {
		have, _ := hooks[ev].([]any)
		hooks[ev] = append(have, groups.([]any)...)
	}
	out, err := json.MarshalIndent(doc, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A .codex/hooks.json of the user's is evaluated and recorded as Tree
// Ring's merged groups (a managed block), never as the file Tree Ring would
// create; absent, or exactly Tree Ring's file, it stays the owned file, so
// the record of every existing Codex install is unchanged.
func TestCodexHooksResolve(t *testing.T) {
	const user = `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"echo bye"}]}],"PreToolUse":[{"hooks":[{"type":"command","command":"echo t"}]}]}}`
	a, _ := Lookup("codex")
	mat := a.Material(Context{})
	for _, c := range []struct {
		name    string
		disk    []byte // nil: absent
		form    string // "file" or "block"
		state   PathState
		reason  string
		snippet bool
	}{
		{"absent", nil, "file", PathAbsent, "", false},
		{"Tree Ring's own file", CodexHooksJSON(), "file", PathMatch, "", false},
		{"the user's file", []byte(user), "block", PathConflict, ReasonExistingFile, true},
		{"the user's file with the groups merged", mergeCodexHooks(t, user), "block", PathMatch, "", false},
		{"merged into an empty document", mergeCodexHooks(t, `{}`), "block", PathMatch, "", false},
		{"merged twice", mergeCodexHooks(t, string(mergeCodexHooks(t, user))), "block", PathConflict, ReasonManagedConflict, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.disk != nil {
				if err := os.MkdirAll(filepath.Join(dir, ".codex"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, codexHooks), c.disk, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			root, err := OpenProjectRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			res, err := Resolve(root, mat)
			if err != nil {
				t.Fatal(err)
			}
			rec := a.Record(res)
			asFile := slices.ContainsFunc(rec.OwnedFiles, func(f events.FileDigest) bool { return f.Path == codexHooks })
			asBlock := slices.ContainsFunc(rec.ManagedBlocks, func(b events.BlockDigest) bool { return b.Path == codexHooks && b.BlockID == codexHooksID })
			if asFile != (c.form == "file") || asBlock != (c.form == "block") {
				t.Fatalf("record %+v, want the hooks as a %s", rec, c.form)
			}
			if c.form == "file" && !rec.Equal(a.Record(mat)) {
				t.Fatal("the file form is not the unresolved record")
			}
			fs, err := Evaluate(root, res)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(fs, func(f Finding) bool { return f.Path == codexHooks })
			f := fs[i]
			if f.State != c.state || f.Reason != c.reason || (f.Block != nil && f.State == PathConflict) != c.snippet {
				t.Fatalf("finding %+v", f)
			}
			if c.snippet && f.Block.Snippet != string(CodexHooksSnippet()) {
				t.Fatal("the review offers another snippet")
			}
			if c.state == PathMatch {
				disk, changed, err := DiskRecord(root, "codex", rec)
				if err != nil || slices.Contains(changed, codexHooks) {
					t.Fatalf("disk record: %v, changed %v", err, changed)
				}
				if c.form == "block" && len(disk.ManagedBlocks) != 1 {
					t.Fatalf("disk record %+v", disk)
				}
			}
		})
	}
}

// Codex keys a hook's trust by its position in the file: with Tree Ring's
// groups merged after the user's, status asks for the keys where they sit
// (Stop is the second group), computed from the file on disk.
func TestCodexTrustMergedHooks(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	merged := mergeCodexHooks(t, `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"echo bye"}]}],"PreToolUse":[{"hooks":[{"type":"command","command":"echo t"}]}]}}`)
	if err := os.WriteFile(filepath.Join(dir, codexHooks), merged, 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := OpenProjectRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	q := codexSettings(t, dir, "[projects."+`"`+dir+`"`+"]\ntrust_level = \"trusted\"\n")
	q.Root = root
	got := codexTrust(q)
	file := filepath.Join(dir, codexHooks)
	for _, key := range []string{"session_start:0:0", "subagent_start:0:0", "stop:1:0", "subagent_stop:0:0"} {
		if !strings.Contains(got.Next, `[hooks.state."`+file+":"+key+`"]`) {
			t.Errorf("no line for %s in %q", key, got.Next)
		}
	}
	if got.Granted || strings.Contains(got.Next, ":stop:0:0") || strings.Contains(got.Next, "echo") {
		t.Fatalf("verdict %+v", got)
	}
	lines := got.Next[strings.Index(got.Next, ":\n")+2 : strings.LastIndex(got.Next, "\nThen")]
	q = codexSettings(t, dir, "[projects."+`"`+dir+`"`+"]\ntrust_level = \"trusted\"\n\n"+lines+"\n")
	q.Root = root
	if got := codexTrust(q); !got.Granted {
		t.Fatalf("with the printed lines: %+v", got)
	}
}

// FuzzCodexOwnHookHashes: Tree Ring's own hook keys in any hooks.json
// never panic, and each is a key (with the same hash) of the whole file's
// whenever that parses.
func FuzzCodexOwnHookHashes(f *testing.F) {
	f.Add(CodexHooksJSON())
	f.Add([]byte(`{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"echo"}]}],"PreToolUse":[]}}`))
	f.Add([]byte(`{"hooks":{"Stop":[{"hooks":"x"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		own, err := codexHookHashes("/p/.codex/hooks.json", data, true)
		if err != nil {
			return
		}
		all, err := CodexHookHashes("/p/.codex/hooks.json", data)
		if err != nil {
			return // an event Codex has no key for: the user's, skipped by own
		}
		for k, h := range own {
			if all[k] != h {
				t.Fatalf("own key %s=%s, whole file %s", k, h, all[k])
			}
		}
	})
}

// codexSettings writes a Codex config.toml under a fresh CODEX_HOME whose
// path holds a canary (an environment value must never be echoed) and
// returns the query for project.
func codexSettings(t *testing.T, project, config string) TrustQuery {
	t.Helper()
	home := filepath.Join(t.TempDir(), "CANARY-env-5c1d")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if config != "" {
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return TrustQuery{Project: project, Getenv: func(k string) string {
		if k == "CODEX_HOME" {
			return home
		}
		return ""
	}}
}
