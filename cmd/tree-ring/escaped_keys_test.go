package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tree-ring/tree-ring/bolt"
)

// TestEscapedKeysOneReading: an export whose payload keys are spelled with
// JSON escapes is imported (the strict decoder reads the escapes), and
// afterwards every reader of the ledger agrees with it: audit verify,
// audit replay of the store, audit replay --from-file of the export, and
// integrations status (issue 18: verify said verified while replay and
// status failed on the same log).
func TestEscapedKeysOneReading(t *testing.T) {
	for _, name := range []string{"escaped-transition-keys", "escaped-receipt-key"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			root := filepath.Join(dir, "store") // a scratch root: the fixture is another project's
			file := fixturePath(name)
			at := "2026-09-02T10:00:08Z"
			if r := runCLI(t, "", "--root", root, "events", "import", file); r.code != 0 {
				t.Fatalf("import: exit %d: %s", r.code, r.stderr)
			}
			if r := runCLI(t, "", "--root", root, "audit", "verify"); r.code != 0 {
				t.Fatalf("verify: exit %d: %s", r.code, r.stderr)
			}
			fromStore := runCLI(t, "", "--root", root, "--json", "audit", "replay", "--at", at)
			fromFile := runCLI(t, "", "--root", root, "--json", "audit", "replay", "--from-file", file, "--at", at)
			if fromStore.code != 0 || fromFile.code != 0 {
				t.Fatalf("replay: store exit %d (%s), file exit %d (%s)", fromStore.code, fromStore.stderr, fromFile.code, fromFile.stderr)
			}
			s, f := decodeReplayJSON(t, fromStore.stdout), decodeReplayJSON(t, fromFile.stdout)
			// The store numbers positions after its own first events; the
			// rest must be the same.
			for _, r := range []replayJSON{s, f} {
				for i := range r.Harnesses {
					for j := range r.Harnesses[i].Steps {
						r.Harnesses[i].Steps[j].Position = 0
					}
					for j := range r.Harnesses[i].Workers {
						r.Harnesses[i].Workers[j].Position = 0
					}
				}
			}
			if !reflect.DeepEqual(s.Harnesses, f.Harnesses) || len(s.Harnesses) != 1 {
				t.Fatalf("the store and the file replay differently:\n%s\n%s", fromStore.stdout, fromFile.stdout)
			}
			want := map[string]string{"escaped-transition-keys": "active", "escaped-receipt-key": "configured-awaiting-proof"}[name]
			if got := string(s.Harnesses[0].State); got != want {
				t.Fatalf("replayed to %s, want %s", got, want)
			}
			// Status reads a project's .tree-ring: the fixture's ledger file is
			// copied there (an import into it refuses another project's store).
			project := filepath.Join(dir, ".tree-ring")
			if err := os.Mkdir(project, 0o700); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(root, bolt.LedgerFile))
			if err == nil {
				err = os.WriteFile(filepath.Join(project, bolt.LedgerFile), b, 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			st := runCLI(t, "", "--root", project, "--source-root", dir, "--json", "integrations", "status")
			if st.code != 0 || st.stderr != "" {
				t.Fatalf("status: exit %d: %s", st.code, st.stderr)
			}
			var out struct {
				Integrations []struct {
					ID    string `json:"id"`
					State string `json:"state"`
				} `json:"integrations"`
			}
			if err := json.Unmarshal([]byte(st.stdout), &out); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, i := range out.Integrations {
				// No bridge files in dir: the ledger's published bridge is
				// missing on disk, which status reports (it no longer fails
				// replaying the escaped keys).
				if i.ID == "claude-code" && i.State == "needs-user-review" {
					found = true
				}
			}
			if !found {
				t.Fatalf("status does not report claude-code:\n%s", st.stdout)
			}
		})
	}
}
