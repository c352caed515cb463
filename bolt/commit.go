package bolt

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tree-ring/tree-ring/events"
	bbolt "go.etcd.io/bbolt"
)

// CommitError is a write transaction whose callback succeeded but whose
// commit failed in the disk layer (a page write, a sync, growing the file).
//
// bbolt writes the data pages, syncs, writes the meta page and syncs again.
// A failure before the meta page was written leaves the ledger as it was
// (Visible false: nothing changed). A failure of the last sync leaves the
// new meta page in the page cache: this process and every reader see the
// transaction, but whether it survives a crash is unknown (Visible true:
// the outcome is indeterminate). The Store then refuses further writes, so
// nothing is built on a state that may vanish; reopen it to go on.
type CommitError struct {
	Path    string
	Err     error
	Visible bool
}

func (e *CommitError) Error() string {
	if e.Visible {
		return fmt.Sprintf("%s: outcome indeterminate: the commit reached the ledger but its sync failed (%s); readers see it now, a crash may undo it", e.Path, cause(e.Err))
	}
	return fmt.Sprintf("%s: commit failed, nothing changed: %s", e.Path, cause(e.Err))
}

func (e *CommitError) Unwrap() error { return e.Err }

// Indeterminate reports whether the transaction may have taken effect; the
// command layer maps it to its exit code for unknown outcomes.
func (e *CommitError) Indeterminate() bool { return e.Visible }

// cause is err without the absolute path an *os.PathError repeats.
func cause(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// UninitializedError is a ledger file that is a valid, empty bbolt
// database without the ledger's buckets: what a tree-ring older than this
// check left when its init was interrupted between creating the file and
// its first commit. A write open completes it; a read-only open refuses it
// with the repair.
type UninitializedError struct{ Path string }

func (e *UninitializedError) Error() string {
	return fmt.Sprintf("%s: an empty ledger (an interrupted init left it); run `tree-ring init` to complete it", e.Path)
}

// createLayout makes the buckets and meta keys of a new ledger in tx.
func createLayout(tx *bbolt.Tx) error {
	for _, b := range allBuckets {
		if _, err := tx.CreateBucket(b); err != nil {
			return fmt.Errorf("create bucket %s: %w", b, err)
		}
	}
	m := tx.Bucket(bucketMeta)
	if err := m.Put(keyFormat, []byte(FormatVersion)); err != nil {
		return err
	}
	return m.Put(keyChainHead, []byte(events.GenesisHash))
}

// update runs fn in a bbolt write transaction, turning a panic or memory
// fault (bbolt reading a damaged file) into *CorruptError and a failed
// commit into *CommitError. bbolt rolls the transaction back and releases
// its locks before a panic reaches here.
func (s *Store) update(fn func(tx *bbolt.Tx) error) (err error) {
	if s.indeterminate != nil {
		return s.indeterminate
	}
	var txid int
	var commitStart time.Time
	committing := false
	err = s.guard(func() error {
		return s.db.Update(func(tx *bbolt.Tx) error {
			txid = tx.ID()
			if err := fn(tx); err != nil {
				return err
			}
			committing, commitStart = true, time.Now()
			return nil
		})
	})
	if err == nil && committing {
		s.committed(commitStart)
		if s.opts.OnCommit != nil {
			s.opts.OnCommit()
		}
	}
	if err == nil || !committing {
		return err
	}
	var ce *CorruptError
	if errors.As(err, &ce) {
		return err
	}
	visible := false
	_ = s.guard(func() error {
		return s.db.View(func(tx *bbolt.Tx) error { visible = tx.ID() >= txid; return nil })
	})
	cerr := &CommitError{Path: s.path, Err: err, Visible: visible}
	if visible {
		s.indeterminate = cerr
	}
	return cerr
}

// CreateDurabilityError is a new root directory, or a new ledger linked
// into place, whose parent directory's sync failed: it is complete and
// visible, but whether its directory entry survives a crash is unknown.
type CreateDurabilityError struct {
	Path string
	Err  error
}

func (e *CreateDurabilityError) Error() string {
	return fmt.Sprintf("%s: outcome indeterminate: created, but %v", e.Path, e.Err)
}

func (e *CreateDurabilityError) Unwrap() error { return e.Err }

// Indeterminate is always true: see the type.
func (e *CreateDurabilityError) Indeterminate() bool { return true }
