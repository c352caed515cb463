package bolt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
)

func TestLedgerFileModes(t *testing.T) {
	st, path := openTest(t, Options{})
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		t.Errorf("root mode %v %v, want drwx------", fi.Mode(), err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
		t.Errorf("ledger mode %v %v, want -rw-------", fi.Mode(), err)
	}
	if filepath.Base(path) != LedgerFile {
		t.Errorf("ledger file %s", path)
	}
	_ = st
}

// realLedger builds a small valid ledger and returns its bytes and the
// size its pages need (the file may be longer: bbolt grows it in steps).
func realLedger(t *testing.T) ([]byte, int) {
	t.Helper()
	path, _ := tamperFixture(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var need int64
	_ = db.View(func(tx *bbolt.Tx) error { need = tx.Size(); return nil })
	return b, int(need)
}

// TestOpenRefusesBadPaths: each broken layout gets a typed error naming the
// path and the cause, in read-only and read-write mode, and nothing on disk
// changes.
func TestOpenRefusesBadPaths(t *testing.T) {
	ledger, need := realLedger(t)
	foreign := func(t *testing.T, path string) {
		db, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("widgets")); return err }); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	cases := []struct {
		name   string
		setup  func(t *testing.T, root string) // root does not exist yet
		target func(root string) string        // the path the error must name
		check  func(err error) bool
		cause  string
	}{
		{"root is a file", func(t *testing.T, root string) { write(t, root, "not a dir") },
			self, isInvalidRoot, "root is not a directory"},
		{"root is a symlink", func(t *testing.T, root string) {
			real := root + ".real"
			mkdir(t, real)
			write(t, filepath.Join(real, LedgerFile), string(ledger))
			symlink(t, real, root)
		}, self, isInvalidRoot, "root is a symlink"},
		{"ledger is a symlink", func(t *testing.T, root string) {
			mkdir(t, root)
			write(t, root+".db", string(ledger))
			symlink(t, root+".db", filepath.Join(root, LedgerFile))
		}, ledgerIn, isInvalidRoot, "ledger is a symlink"},
		{"ledger is a directory", func(t *testing.T, root string) {
			mkdir(t, root)
			mkdir(t, filepath.Join(root, LedgerFile))
		}, ledgerIn, isInvalidRoot, "ledger is not a regular file"},
		{"ledger is empty", func(t *testing.T, root string) {
			mkdir(t, root)
			write(t, filepath.Join(root, LedgerFile), "")
		}, ledgerIn, isCorrupt, "empty file"},
		{"ledger is garbage", func(t *testing.T, root string) {
			mkdir(t, root)
			write(t, filepath.Join(root, LedgerFile), strings.Repeat("garbage!", 2048))
		}, ledgerIn, isCorrupt, "ledger is corrupt"},
		{"ledger is truncated to one page", func(t *testing.T, root string) {
			mkdir(t, root)
			write(t, filepath.Join(root, LedgerFile), string(ledger[:4096]))
		}, ledgerIn, isCorrupt, "ledger is corrupt"},
		{"ledger is truncated to two pages", func(t *testing.T, root string) {
			mkdir(t, root)
			write(t, filepath.Join(root, LedgerFile), string(ledger[:8192]))
		}, ledgerIn, isCorrupt, "ledger is corrupt"},
		{"ledger is truncated in the middle", func(t *testing.T, root string) {
			mkdir(t, root)
			write(t, filepath.Join(root, LedgerFile), string(ledger[:need-4096]))
		}, ledgerIn, isCorrupt, "truncated"},
		{"ledger belongs to another application", func(t *testing.T, root string) {
			mkdir(t, root)
			foreign(t, filepath.Join(root, LedgerFile))
		}, ledgerIn, isCorrupt, "not a tree-ring ledger"},
	}
	for _, c := range cases {
		for _, ro := range []bool{true, false} {
			name := c.name + map[bool]string{true: "/read-only", false: "/read-write"}[ro]
			t.Run(name, func(t *testing.T) {
				root := filepath.Join(t.TempDir(), ".tree-ring")
				c.setup(t, root)
				before := snapshot(t, filepath.Dir(root))
				st, err := OpenRoot(root, Options{ReadOnly: ro, LockTimeout: 200 * time.Millisecond})
				if err == nil {
					st.Close()
					t.Fatal("opened")
				}
				if !c.check(err) {
					t.Fatalf("error %v (%T) is not the expected kind", err, err)
				}
				msg := err.Error()
				if !strings.HasPrefix(msg, c.target(root)+": ") || !strings.Contains(msg, c.cause) || strings.Contains(msg, "\n") {
					t.Fatalf("error %q: want one line naming %s and %q", msg, c.target(root), c.cause)
				}
				if after := snapshot(t, filepath.Dir(root)); after != before {
					t.Fatalf("the directory changed:\nbefore %s\nafter  %s", before, after)
				}
			})
		}
	}
}

func TestOpenLockedLedger(t *testing.T) {
	st, path := openTest(t, Options{})
	before := fileDigest(t, path)
	for _, ro := range []bool{false, true} {
		start := time.Now()
		_, err := Open(path, Options{ReadOnly: ro, LockTimeout: 150 * time.Millisecond})
		var le *LockedError
		if !errors.As(err, &le) || le.Path != path || !strings.Contains(err.Error(), path+": ledger is locked by another process") {
			t.Fatalf("read-only=%v: %v", ro, err)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("the lock timeout was not applied")
		}
	}
	if fileDigest(t, path) != before {
		t.Fatal("ledger changed")
	}
	_ = st
}

func TestOpenReadOnlyMissing(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".tree-ring")
	_, err := OpenRoot(root, Options{ReadOnly: true})
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.Path != root {
		t.Fatalf("%v", err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a read-only open created the root")
	}
	mkdir(t, root)
	if _, err := OpenRoot(root, Options{ReadOnly: true}); !errors.As(err, &nf) || nf.Path != filepath.Join(root, LedgerFile) {
		t.Fatalf("%v", err)
	}
}

// TestOpenDoesNotCommit: opening an up-to-date ledger for writing only reads.
func TestOpenDoesNotCommit(t *testing.T) {
	path, projs := tamperFixture(t)
	before := fileDigest(t, path)
	st, err := Open(path, Options{Projections: projs})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if fileDigest(t, path) != before {
		t.Fatal("opening an up-to-date ledger wrote to it")
	}
}

func self(root string) string     { return root }
func ledgerIn(root string) string { return filepath.Join(root, LedgerFile) }

func isInvalidRoot(err error) bool { var e *InvalidRootError; return errors.As(err, &e) }
func isCorrupt(err error) bool     { var e *CorruptError; return errors.As(err, &e) }

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// snapshot lists every entry under dir with its kind and content digest.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			b.WriteString(" " + fileDigest(t, p))
		}
		b.WriteString("; ")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
