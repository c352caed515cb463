package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Issue 24 finding 8: another project's export imported into a fresh
// checkout (no .tree-ring yet) is refused, naming fleet collect and a
// scratch root; init then works. The same export imports into a scratch
// root, and the project's own export restores into its emptied store.
func TestEventsImportForeignRootIntoFreshCheckout(t *testing.T) {
	a, b := newHP(t, ".codex"), newHP(t, ".codex")
	b.n = 50_000_000
	a.init()
	if r := a.hook("codex", a.payload("codex", "session-start.json", nil)); r.code != 0 {
		t.Fatal(r.stderr)
	}
	export := filepath.Join(t.TempDir(), "a.events")
	if err := os.WriteFile(export, []byte(a.ok("", "events")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(b.dir, ".tree-ring")); err != nil {
		t.Fatal(err)
	}
	assertRefused(t, b.run("", "events", "import", export), exitError, export+":1:", "another project root", "fleet collect", "scratch --root")
	if r := b.run("", "events"); r.stdout != "" {
		t.Fatalf("the refused import left events: %s", r.stdout)
	}
	b.init()
	if r := b.hook("codex", b.payload("codex", "session-start.json", nil)); r.code != 0 {
		t.Fatalf("hook after init: %s", r.stderr)
	}
	scratch := filepath.Join(t.TempDir(), "scratch")
	if r := b.raw("", "--root", scratch, "events", "import", export); r.code != 0 {
		t.Fatalf("a scratch root refused the export: %s", r.stderr)
	}
}
