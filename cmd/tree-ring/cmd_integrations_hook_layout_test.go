package main

import (
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/projections"
	"github.com/tree-ring/tree-ring/projections/recall"
)

// downgradeProjection rewrites a closed ledger's checkpoint of projection
// name as a build one layout older leaves it (version below this build's),
// and returns the position it was folded to.
func downgradeProjection(t *testing.T, path, name string, version int) uint64 {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pos uint64
	err = db.Update(func(tx *bbolt.Tx) error {
		cp := tx.Bucket([]byte("projection_checkpoints"))
		v := cp.Get([]byte(name))
		if len(v) != 16 {
			t.Fatalf("checkpoint of %s: %x", name, v)
		}
		pos = binary.BigEndian.Uint64(v[8:])
		return cp.Put([]byte(name), binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(version)), pos))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return pos
}

// No hook ever refolds a projection (issue 28 item 3). For each
// projection in turn, a ledger left at the layout below this build's:
// every hook that opens the ledger fails open at once (its harness's
// failure exit, nothing on stdout, one line naming `tree-ring init`, no
// absolute path) without changing a byte of the project (no refold, no
// receipt); a command and a read refuse the same way; init migrates it,
// after which the hook delivers and the ledger verifies.
func TestHookOnAnOldProjectionLayoutFailsOpenUntilInit(t *testing.T) {
	p := newHP(t, ".claude", ".codex")
	p.init()
	p.ok("", "remember", "Use pnpm, not npm", "--event-type", "decision")
	if r := p.hook("codex", p.payload("codex", "session-start.json", nil)); r.code != 0 {
		t.Fatalf("hook on a current ledger: exit %d: %s", r.code, r.stderr)
	}
	ledger := filepath.Join(p.dir, ".tree-ring", "ledger.db")
	for _, proj := range projections.All() {
		t.Run(proj.Name(), func(t *testing.T) {
			downgradeProjection(t, ledger, proj.Name(), proj.Version()-1)
			before := hashTree(t, p.dir)
			for _, h := range []string{"claude-code", "codex"} {
				a, _ := adapters.Lookup(h)
				r := p.hook(h, p.payload(h, "session-start.json", nil))
				if r.code != a.HookFailureExit() || r.stdout != "" || !strings.Contains(r.stderr, "run `tree-ring init`") ||
					!strings.Contains(r.stderr, "projection "+proj.Name()) || strings.Contains(r.stderr, p.dir) {
					t.Fatalf("%s hook on %s at layout %d: exit %d, stdout %q, stderr %q; want %d, no output, naming the projection and init",
						h, proj.Name(), proj.Version()-1, r.code, r.stdout, r.stderr, a.HookFailureExit())
				}
			}
			for _, args := range [][]string{
				{"remember", "Pin the toolchain", "--event-type", "decision"},
				{"recall", "pnpm"},
				{"audit", "verify"},
			} {
				if r := p.run("", args...); r.code != 2 || !strings.Contains(r.stderr, "run `tree-ring init`") || strings.Contains(r.stderr, p.dir) {
					t.Fatalf("%v at an old layout: exit %d, stderr %q; want 2 naming init", args, r.code, r.stderr)
				}
			}
			if after := hashTree(t, p.dir); !mapsEqual(before, after) {
				t.Fatal("a refused hook or command changed the project (a refold, a receipt)")
			}

			p.init()
			if r := p.hook("codex", p.payload("codex", "session-start.json", nil)); r.code != 0 || !strings.Contains(r.stdout, "hookSpecificOutput") {
				t.Fatalf("hook after init's migration: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			if out := p.ok("", "audit", "verify"); !strings.Contains(out, "verified") {
				t.Fatalf("audit verify after init's migration: %s", out)
			}
		})
	}
}

// `projections rebuild` is the other explicit migration: it refolds a
// projection at an old layout without init.
func TestProjectionsRebuildMigratesAnOldLayout(t *testing.T) {
	p := newHP(t, ".codex")
	p.init()
	p.ok("", "remember", "Use pnpm, not npm", "--event-type", "decision")
	ledger := filepath.Join(p.dir, ".tree-ring", "ledger.db")
	downgradeProjection(t, ledger, recall.Name, recall.Version-1)
	if r := p.run("", "recall", "pnpm"); r.code != 2 {
		t.Fatalf("recall at an old layout: exit %d, %s", r.code, r.stderr)
	}
	p.ok("", "projections", "rebuild")
	if out := p.ok("", "recall", "pnpm"); !strings.Contains(out, "Use pnpm") {
		t.Fatalf("recall after rebuild: %q", out)
	}
	if out := p.ok("", "audit", "verify"); !strings.Contains(out, "verified") {
		t.Fatalf("audit verify after rebuild: %s", out)
	}
}
