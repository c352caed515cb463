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

// An empty bbolt file (an init of an older build killed before its first
// commit) is refused read-only with the repair and completed by a write
// open, not refused forever as "not a tree-ring ledger".
func TestEmptyBboltFileIsCompletedByAWriteOpen(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".tree-ring")
	mkdir(t, root)
	path := filepath.Join(root, LedgerFile)
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before := fileDigest(t, path)
	_, err = OpenRoot(root, Options{ReadOnly: true})
	var ue *UninitializedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "run `tree-ring init`") {
		t.Fatalf("read-only open: %v", err)
	}
	if fileDigest(t, path) != before {
		t.Fatal("a read-only open changed the file")
	}
	st, err := OpenRoot(root, Options{})
	if err != nil {
		t.Fatalf("write open: %v", err)
	}
	st.Close()
	ro, err := OpenRoot(root, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open after completion: %v", err)
	}
	ro.Close()
	checkLedger(t, path, nil, true)
}

// A new ledger appears at its final name complete: the buckets and meta
// are committed in the temporary file before it is linked, and no
// temporary file stays behind.
func TestCreateLedgerLinksACompleteLedger(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".tree-ring")
	mkdir(t, root)
	path := filepath.Join(root, LedgerFile)
	if err := createLedger(path); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenRoot(root, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("a created ledger is not complete: %v", err)
	}
	ro.Close()
	names, err := os.ReadDir(root)
	if err != nil || len(names) != 1 {
		t.Fatalf("root holds %v (%v)", names, err)
	}
}

// MustExist refuses to create a missing ledger in write mode.
func TestMustExistRefusesToCreate(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".tree-ring")
	mkdir(t, root)
	_, err := OpenRoot(root, Options{MustExist: true})
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("%v", err)
	}
	if _, err := os.Stat(filepath.Join(root, LedgerFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("MustExist created the ledger")
	}
}

func TestCommitErrorSaysWhetherAnythingChanged(t *testing.T) {
	pe := &os.PathError{Op: "write", Path: "/abs/.tree-ring/ledger.db", Err: errors.New("input/output error")}
	for _, tc := range []struct {
		err  *CommitError
		want string
	}{
		{&CommitError{Path: ".tree-ring/ledger.db", Err: pe}, ".tree-ring/ledger.db: commit failed, nothing changed: write: input/output error"},
		{&CommitError{Path: ".tree-ring/ledger.db", Err: errors.New("input/output error"), Visible: true},
			".tree-ring/ledger.db: outcome indeterminate: the commit reached the ledger but its sync failed (input/output error); readers see it now, a crash may undo it"},
	} {
		if got := tc.err.Error(); got != tc.want || tc.err.Indeterminate() != tc.err.Visible {
			t.Errorf("got %q\nwant %q", got, tc.want)
		}
	}
}
