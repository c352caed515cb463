package main

import (
	"bytes"
	"encoding/binary"
	gomaps "maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/bolt"
)

// receiptBytes is every receipt file of p, by project-relative path.
func receiptBytes(t *testing.T, p *hp) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, rel := range p.receipts() {
		b, err := os.ReadFile(filepath.Join(p.dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		out[rel] = b
	}
	return out
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
}

func exportTo(t *testing.T, p *hp, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(p.ok("", "events")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Issue 24 finding 7: the documented restore (the latest events export
// imported into an empty .tree-ring) puts back the receipt files its
// events name, byte for byte, and audit verify passes; so does a newer
// export imported onto an older copy of the whole .tree-ring, and a
// rebuild after the files were lost.
func TestRestoreRematerializesReceiptFiles(t *testing.T) {
	p := newHP(t, ".claude")
	p.init()
	in := p.payload("claude-code", "session-start.json", nil)
	if r := p.hook("claude-code", in); r.code != 0 {
		t.Fatal(r.stderr)
	}
	store := filepath.Join(p.dir, ".tree-ring")
	older := filepath.Join(t.TempDir(), "older")
	copyDir(t, store, older)
	if r := p.hook("claude-code", in); r.code != 0 {
		t.Fatal(r.stderr)
	}
	want := receiptBytes(t, p)
	if len(want) != 2 {
		t.Fatalf("%d receipts", len(want))
	}
	export := exportTo(t, p, "latest.events")

	// Into an empty .tree-ring.
	if err := os.RemoveAll(store); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(store, 0o700); err != nil {
		t.Fatal(err)
	}
	if out := p.ok("", "events", "import", export); !strings.Contains(out, "restored 2 receipt file(s)") {
		t.Fatalf("restore: %q", out)
	}
	if got := receiptBytes(t, p); !gomaps.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("restored receipts differ: %v", slices.Sorted(gomaps.Keys(got)))
	}
	p.ok("", "audit", "verify")

	// A newer export onto an older copy of the whole store.
	if err := os.RemoveAll(store); err != nil {
		t.Fatal(err)
	}
	copyDir(t, older, store)
	if out := p.ok("", "events", "import", export); !strings.Contains(out, "restored 1 receipt file(s)") {
		t.Fatalf("newer onto older: %q", out)
	}
	if got := receiptBytes(t, p); !gomaps.EqualFunc(got, want, bytes.Equal) {
		t.Fatal("restored receipts differ")
	}
	p.ok("", "audit", "verify")

	// Lost files come back with a rebuild; an existing file is kept.
	rels := slices.Sorted(gomaps.Keys(want))
	if err := os.Remove(filepath.Join(p.dir, rels[0])); err != nil {
		t.Fatal(err)
	}
	if r := p.run("", "audit", "verify"); r.code != exitVerify || !strings.Contains(r.stderr, "projections rebuild") {
		t.Fatalf("verify with a lost file: exit %d %s", r.code, r.stderr)
	}
	if out := p.ok("", "projections", "rebuild"); !strings.Contains(out, "restored 1 receipt file(s)") {
		t.Fatalf("rebuild: %q", out)
	}
	if got := receiptBytes(t, p); !gomaps.EqualFunc(got, want, bytes.Equal) {
		t.Fatal("rebuilt receipts differ")
	}
	p.ok("", "audit", "verify")
}

// Issue 24 finding 6: the ledger loses the hook's commit (its file is
// replaced by the copy taken before the hook, or the newest bbolt meta
// page's txid has a bit flipped); audit verify exits 3 naming the loss.
func TestAuditVerifyFindsTheLostCommit(t *testing.T) {
	for _, c := range []struct {
		name string
		lose func(t *testing.T, ledger string, before []byte)
		want string
	}{
		{"older ledger file", func(t *testing.T, ledger string, before []byte) {
			if err := os.WriteFile(ledger, before, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "name a receipt the ledger never recorded"},
		{"flipped meta txid", func(t *testing.T, ledger string, _ []byte) {
			b, err := os.ReadFile(ledger)
			if err != nil {
				t.Fatal(err)
			}
			// The meta page with the higher txid (bytes 64..71 of each).
			size := int(binary.NativeEndian.Uint32(b[24:]))
			page := 0
			if binary.NativeEndian.Uint64(b[size+64:]) > binary.NativeEndian.Uint64(b[64:]) {
				page = 1
			}
			b[page*size+64] ^= 1
			if err := os.WriteFile(ledger, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "lost its last commit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newHP(t, ".claude")
			p.init()
			ledger := filepath.Join(p.dir, ".tree-ring", bolt.LedgerFile)
			before, err := os.ReadFile(ledger)
			if err != nil {
				t.Fatal(err)
			}
			n := len(p.eventTypes())
			if r := p.hook("claude-code", p.payload("claude-code", "session-start.json", nil)); r.code != 0 {
				t.Fatal(r.stderr)
			}
			c.lose(t, ledger, before)
			if got := len(p.eventTypes()); got != n {
				t.Fatalf("the ledger holds %d events, want the %d before the hook", got, n)
			}
			r := p.run("", "audit", "verify")
			if r.code != exitVerify || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("audit verify: exit %d %s", r.code, r.stderr)
			}
			if c.name == "older ledger file" && !strings.Contains(r.stderr, p.receipts()[0]) {
				t.Errorf("the failure does not name the receipt file: %s", r.stderr)
			}
		})
	}
}

// A healthy fleet replica verifies: it holds no project files.
func TestAuditVerifyOnAReplica(t *testing.T) {
	srv := startNATS(t)
	p := fleetProject(t, 1)
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	dir := t.TempDir()
	p.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", dir)
	rep := filepath.Join(dir, storeIDOf(t, filepath.Join(p.dir, ".tree-ring")))
	if r := p.raw("", "--root", rep, "audit", "verify"); r.code != 0 {
		t.Fatalf("audit verify on the replica: exit %d %s", r.code, r.stderr)
	}
}
