package bolt

import (
	"fmt"
	"os"
	"time"
)

// yieldGap is how long Yield leaves the file lock free before taking it
// again when it sees no process waiting (one may be about to wait).
const yieldGap = time.Millisecond

// handoffMax bounds how long Yield waits for processes it saw blocked on
// the lock to take it: woken by the kernel when the lock is released, a
// waiter must still be scheduled, and on a loaded machine that can take
// longer than any fixed gap, after which the lock would be ours again for
// another whole slice.
const handoffMax = 100 * time.Millisecond

// Yield lets other processes (a hook, `runs`) have the ledger between two
// transactions of a long operation: when Options.SliceBudget is set and the
// lock has been held at least that long, it closes the file (releasing the
// lock), waits until the processes that were blocked on the lock have taken
// it (at most handoffMax; yieldGap if none was seen) and opens it again,
// waiting up to Options.LockTimeout for whoever took the lock meanwhile. Events they
// appended meanwhile are seen by the next transaction; projections they
// left behind are caught up as Open does. Otherwise it does nothing.
//
// Yield must not run concurrently with any other use of the Store (it
// replaces the bbolt handle). If reopening fails the Store is closed and
// every later call fails.
func (s *Store) Yield() error {
	if s.opts.SliceBudget <= 0 || s.opts.ReadOnly || time.Since(s.since) < s.opts.SliceBudget {
		return nil
	}
	return s.reopen()
}

// overdue reports whether the lock has been held past the slice budget:
// long loops end their transaction there, commit, and Yield.
func (s *Store) overdue() bool {
	return s.opts.SliceBudget > 0 && time.Since(s.since) >= s.opts.SliceBudget
}

// Overdue reports whether this transaction's process has held the ledger
// lock longer than Options.SliceBudget (always false without one). A long
// loop checks it every few items, stops there, lets the transaction commit
// and calls Store.Yield before the next.
func (t *Tx) Overdue() bool { return t.s.overdue() }

// reopen releases and retakes the file lock. The file must still be the
// one this Store opened: a ledger deleted or replaced meanwhile is refused,
// never recreated.
func (s *Store) reopen() error {
	before, err := os.Lstat(s.path)
	if err != nil {
		return fmt.Errorf("reopen ledger %s: %w", s.path, err)
	}
	waiting := lockWaiters(before) // blocked behind us, as seen while we hold the lock
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("release ledger %s: %w", s.path, err)
	}
	if waiting {
		// Until they have it (then none is blocked; opening below waits
		// for them), or handoffMax.
		for t0 := time.Now(); lockWaiters(before) && time.Since(t0) < handoffMax; {
			time.Sleep(200 * time.Microsecond)
		}
	} else {
		time.Sleep(yieldGap)
	}
	after, err := os.Lstat(s.path)
	if err != nil {
		return fmt.Errorf("reopen ledger %s: %w", s.path, err)
	}
	if !os.SameFile(before, after) {
		return &InvalidRootError{Path: s.path, Reason: "the ledger was replaced while this command released it between batches"}
	}
	db, err := openDB(s.path, s.opts)
	if err != nil {
		return err
	}
	s.db, s.since = db, time.Now()
	if err := s.checkFile(); err != nil {
		return err
	}
	if err := s.checkFormat(); err != nil {
		return err
	}
	return s.init()
}
