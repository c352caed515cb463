package main

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
)

// downgradeToFormat1 rewrites a closed ledger's values and indexes as a
// format-1 build keeps them (each envelope's JSON; one streams key and
// one ids key per event), as an older tree-ring leaves a project.
func downgradeToFormat1(t *testing.T, path string) {
	t.Helper()
	var stored [][]byte // in position order, as the store reads them
	st, err := bolt.Open(path, bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	err = st.ScanRaw(context.Background(), 0, func(_ uint64, raw []byte) error {
		stored = append(stored, append([]byte(nil), raw...))
		return nil
	})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		evb := tx.Bucket([]byte("events"))
		for i, raw := range stored {
			if err := evb.Put(binary.BigEndian.AppendUint64(nil, uint64(i+1)), raw); err != nil {
				return err
			}
		}
		streams, err := tx.CreateBucket([]byte("streams"))
		if err != nil {
			return err
		}
		ids, err := tx.CreateBucket([]byte("ids"))
		if err != nil {
			return err
		}
		err = tx.Bucket([]byte("events")).ForEach(func(k, v []byte) error {
			e, err := events.DecodeStoredRef(v)
			if err != nil {
				return err
			}
			sk := binary.BigEndian.AppendUint64(append([]byte(e.Stream), 0), e.Version)
			if err := streams.Put(sk, append([]byte(nil), k...)); err != nil {
				return err
			}
			return ids.Put(e.ID[:], append([]byte(nil), k...))
		})
		if err != nil {
			return err
		}
		for _, b := range []string{"id_blocks", "stream_blocks"} {
			if err := tx.DeleteBucket([]byte(b)); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte("1"))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A project an older build left in format 1 keeps working with its
// installed program until the explicit upgrade: a newer build's write
// (remember), hook and read (status) refuse it without changing a byte,
// naming `tree-ring init`; init migrates it, after which everything runs
// and the ledger verifies.
func TestFormat1LedgerMigratesOnlyThroughInit(t *testing.T) {
	p := newHP(t, ".claude")
	p.init()
	ledger := filepath.Join(p.dir, ".tree-ring", "ledger.db")
	downgradeToFormat1(t, ledger)
	before := hashTree(t, p.dir)

	for _, args := range [][]string{
		{"remember", "Use pnpm, not npm", "--event-type", "decision"},
		{"integrations", "status"},
		{"audit", "verify"},
	} {
		r := p.run("", args...)
		if r.code != 2 || !strings.Contains(r.stderr, "run `tree-ring init`") || strings.Contains(r.stderr, p.dir) {
			t.Fatalf("%v on a format-1 ledger: exit %d, stderr %q; want exit 2 naming init, no absolute path", args, r.code, r.stderr)
		}
	}
	if r := p.hook("claude-code", p.payload("claude-code", "session-start.json", nil)); r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "run `tree-ring init`") {
		t.Fatalf("hook on a format-1 ledger: exit %d, stdout %q, stderr %q; want 1, no output, naming init", r.code, r.stdout, r.stderr)
	}
	if after := hashTree(t, p.dir); !mapsEqual(before, after) {
		t.Fatalf("a refused command changed the project")
	}

	// Another build at the installed program (an older one, which reads
	// only format 1): init refuses before migrating, changing nothing.
	prog := filepath.Join(p.dir, filepath.FromSlash(adapters.BinaryPath))
	if err := os.Rename(prog, prog+".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho an older build\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	before = hashTree(t, p.dir)
	if r := p.run("", "init"); r.code != 2 || !strings.Contains(r.stderr, "is another build") || !strings.Contains(r.stderr, "mv "+adapters.BinaryPath) {
		t.Fatalf("init with another build installed on a format-1 ledger: exit %d, stderr %q", r.code, r.stderr)
	}
	if after := hashTree(t, p.dir); !mapsEqual(before, after) {
		t.Fatal("init refused but changed the project")
	}
	// The repair it names: move it aside, init again.
	if err := os.Rename(prog, prog+".replaced"); err != nil {
		t.Fatal(err)
	}
	p.ok("", "init")
	p.ok("", "remember", "Use pnpm, not npm", "--event-type", "decision")
	if out := p.ok("", "audit", "verify"); !strings.Contains(out, "verified") {
		t.Fatalf("audit verify after init's migration: %s", out)
	}
}
