package adapters

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events/eventstest"
)

var _ = eventstest.UpdateFlag()

const repo = ".."

// fixtureContext is the store and project the golden bridges are built for.
var fixtureContext = Context{StoreID: "01234567-89ab-4def-8123-456789abcdef", ProjectRootFingerprint: strings.Repeat("a", 64)}

func goldenFile(t *testing.T, path string, got []byte) {
	t.Helper()
	eventstest.Golden(t, path, got)
}

// TestRegistryInvariants: every registered adapter has its docs page, its
// fixtures under testdata/adapters/<id>/ and appears in the FSM fixtures
// under testdata/fixtures/ (that directory is built with the replay work;
// until it exists that last check is skipped).
func TestRegistryInvariants(t *testing.T) {
	fixtures, _ := filepath.Glob(filepath.Join(repo, "testdata", "fixtures", "*.ndjson"))
	_, ferr := os.Stat(filepath.Join(repo, "testdata", "fixtures"))
	var fsmFixtures []byte
	for _, f := range fixtures {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fsmFixtures = append(fsmFixtures, b...)
	}
	want := []string{"agent-zero", "antigravity-cli", "claude-code", "codex", "command-code", "crush", "cursor", "devin-cli", "gemini-cli",
		"goose", "grok-build", "hermes", "kimi-code", "kiro-cli", "omp", "opencode", "pi"}
	if !slices.Equal(IDs(), want) {
		t.Fatalf("registry %v, want %v", IDs(), want)
	}
	for _, a := range All() {
		t.Run(a.ID, func(t *testing.T) {
			doc, err := os.ReadFile(filepath.Join(repo, "docs", "adapters", a.ID+".md"))
			if err != nil {
				t.Fatalf("docs page: %v", err)
			}
			if !bytes.Contains(doc, []byte(a.ID)) {
				t.Errorf("docs/adapters/%s.md does not name its harness id", a.ID)
			}
			entries, err := os.ReadDir(filepath.Join(repo, "testdata", "adapters", a.ID))
			if err != nil || len(entries) == 0 {
				t.Fatalf("fixtures under testdata/adapters/%s: %v", a.ID, err)
			}
			if os.IsNotExist(ferr) {
				t.Logf("testdata/fixtures does not exist yet; FSM fixture check skipped")
			} else if !bytes.Contains(fsmFixtures, []byte(`"harness/`+a.ID+`"`)) && !bytes.Contains(fsmFixtures, []byte(`"`+a.ID+`"`)) {
				t.Errorf("no FSM fixture in testdata/fixtures/*.ndjson mentions %s", a.ID)
			}
		})
	}
}

// declared is the reviewed contract of an adapter, kept as a fixture so
// that a change to the registry is a visible change to testdata.
type declared struct {
	ID             string        `json:"id"`
	Name           string        `json:"name"`
	AdapterVersion string        `json:"adapter_version"`
	Capability     string        `json:"capability"`
	Support        string        `json:"support"`
	Executable     string        `json:"executable"`
	ProjectMarkers []string      `json:"project_markers"`
	HomeMarkers    []string      `json:"home_markers"`
	RestingState   string        `json:"state_before_proof"`
	BridgePath     string        `json:"bridge_path,omitempty"`
	OwnedFiles     []string      `json:"owned_files_allowed"`
	ManagedBlocks  []BlockTarget `json:"managed_blocks_allowed"`
	StdinMode      string        `json:"stdin_mode"`
	HookFailure    int           `json:"hook_failure_exit,omitempty"`
	ContextFormats []string      `json:"context_formats,omitempty"`
	NativeGap      string        `json:"native_gap,omitempty"`
	Record         *Record       `json:"record_for_fixture_store,omitempty"`
}

func TestAdapterContractsAndBridgesGolden(t *testing.T) {
	for _, a := range All() {
		t.Run(a.ID, func(t *testing.T) {
			dir := filepath.Join(repo, "testdata", "adapters", a.ID)
			d := declared{
				ID: a.ID, Name: a.Name, AdapterVersion: a.Version, Capability: string(a.Capability), Support: string(a.Support),
				Executable: a.Executable, ProjectMarkers: nonNilS(a.ProjectMarkers), HomeMarkers: nonNilS(a.HomeMarkers),
				RestingState: string(a.RestingState), BridgePath: a.BridgePath, OwnedFiles: nonNilS(a.OwnedFiles),
				ManagedBlocks: a.ManagedBlocks, StdinMode: string(a.Stdin.Mode), HookFailure: a.HookFailureExit(),
				ContextFormats: a.Stdin.ContextFormats, NativeGap: a.NativeGap,
			}
			if d.ManagedBlocks == nil {
				d.ManagedBlocks = []BlockTarget{}
			}
			if a.Publishes() {
				m := a.Material(fixtureContext)
				r := a.Record(m)
				d.Record = &r
				for _, f := range m.Files {
					goldenFile(t, filepath.Join(dir, "bridge", f.Path), f.Data)
				}
				for _, b := range m.Blocks {
					goldenFile(t, filepath.Join(dir, "bridge", b.Path), b.Whole)
				}
			}
			goldenFile(t, filepath.Join(dir, "adapter.json"), prettyJSON(d))
		})
	}
}

func nonNilS(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// TestStdinFixturesMatchContracts checks each adapter's declared stdin
// contract against the payloads real clients send (testdata/adapters/<id>/
// stdin): valid-* satisfy it; forbidden-* carry a forbidden key; ignored-*
// satisfy it and carry benign metadata outside Required+Optional; invalid-* lack a required
// field; unhooked-* name an event the lifecycle hook does not register.
func TestStdinFixturesMatchContracts(t *testing.T) {
	for _, a := range All() {
		files, _ := filepath.Glob(filepath.Join(repo, "testdata", "adapters", a.ID, "stdin", "*.json"))
		if a.Stdin.Mode == NoStdin {
			if len(files) > 0 {
				t.Errorf("%s has no stdin contract but stdin fixtures", a.ID)
			}
			continue
		}
		if len(files) == 0 {
			t.Errorf("%s: no stdin fixtures", a.ID)
		}
		for _, f := range files {
			name := filepath.Base(f)
			t.Run(a.ID+"/"+name, func(t *testing.T) {
				raw, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				var doc map[string]any
				if err := json.Unmarshal(raw, &doc); err != nil {
					t.Fatal(err)
				}
				c := a.Stdin
				forbidden, unknown, missing := false, false, false
				walkKeys(doc, c.ForbiddenNested, func(k string) {
					if c.IsForbidden(k) {
						forbidden = true
					}
				})
				for k := range doc {
					if !c.IsKnown(k) && !c.IsForbidden(k) {
						unknown = true
					}
				}
				event, _ := doc["hook_event_name"].(string)
				required := slices.Concat(c.Required, c.EventRequired[event])
				for _, k := range required {
					if _, ok := doc[k]; !ok {
						missing = true
					}
				}
				hooked := c.Mode != LifecycleHook || slices.Contains(c.Events, event)
				switch {
				case strings.HasPrefix(name, "valid-"):
					if forbidden || missing || !hooked {
						t.Errorf("valid fixture rejected: forbidden=%v missing=%v hooked=%v unknown=%v", forbidden, missing, hooked, unknown)
					}
				case strings.HasPrefix(name, "forbidden-"):
					if !forbidden {
						t.Error("no forbidden key found")
					}
				case strings.HasPrefix(name, "ignored-"):
					if !unknown || forbidden || missing || !hooked {
						t.Errorf("want a valid payload with ignored metadata (unknown=%v forbidden=%v missing=%v)", unknown, forbidden, missing)
					}
				case strings.HasPrefix(name, "invalid-"):
					if !missing {
						t.Error("no required field missing")
					}
				case strings.HasPrefix(name, "unhooked-"):
					if hooked {
						t.Errorf("event %q is registered", event)
					}
				default:
					t.Errorf("fixture name %s has no known prefix", name)
				}
			})
		}
	}
}

func walkKeys(v any, nested bool, fn func(string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			fn(k)
			if nested {
				walkKeys(e, nested, fn)
			}
		}
	case []any:
		if nested {
			for _, e := range x {
				walkKeys(e, nested, fn)
			}
		}
	}
}
