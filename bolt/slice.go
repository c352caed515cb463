package bolt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/tree-ring/tree-ring/events"
)

// yieldGap is how long Yield leaves the file lock free before taking it
// again when no process announced that it waits (one may be about to).
const yieldGap = time.Millisecond

// handoffMax bounds how long Yield waits for the processes that announced
// themselves to take the lock: woken by the kernel when the lock is
// released, a waiter must still be scheduled, and on a loaded machine that
// can take longer than any short gap (measured: a hook missed three
// 100 ms gaps in a row at load 10), after which the lock would be ours
// again and the hook would wait for another slice and its commit. Only a
// waiter that cannot run (stopped) costs the long operation this much per
// slice.
const handoffMax = time.Second

// minWorkShare is the least share of Options.SliceBudget a slice works
// before it commits, however costly its commits have become.
const minWorkShare = 1.0 / 8

// maxWorkShares bounds how many budgets a slice may work while no process
// waits (where waiters announce themselves): about 1 s at 30 ms.
const maxWorkShares = 32

// slicing is the state of a Store opened with Options.SliceBudget.
type slicing struct {
	// probe is a read-only descriptor of the ledger, kept across Yield,
	// on which overdue looks for announced waiters (announce).
	probe *os.File
	// mu guards the rest: goroutines that append to the Store commit
	// outside bbolt's writer lock.
	mu sync.Mutex
	// work is how long a slice may work before it ends (see committed).
	work time.Duration
	// timeUp is when the running slice ran out of work time (zero if it
	// has not); its commit then updates work.
	timeUp time.Time
	// commits are the durations of the last commits, for their floor.
	commits [16]time.Duration
	ncommit int
}

func (s *Store) openSlicing() error {
	if s.opts.SliceBudget <= 0 {
		return nil
	}
	f, err := openNoFollow(s.path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("open ledger %s: %w", s.path, err)
	}
	s.slice = &slicing{probe: f, work: s.opts.SliceBudget}
	return nil
}

func (s *Store) closeSlicing() {
	if s.slice != nil {
		s.slice.probe.Close()
	}
}

// Yield lets other processes (a hook, `runs`) have the ledger between two
// transactions of a long operation: when Options.SliceBudget is set and the
// running slice is over (it worked its share of the budget, or a process
// announced that it waits), it closes the file (releasing the lock), waits
// until the processes that announced themselves have taken it (at most
// handoffMax; yieldGap if none did) and opens it again, waiting up to
// Options.LockTimeout for whoever took the lock meanwhile. Events they
// appended meanwhile are seen by the next transaction; projections they
// left behind are caught up as Open does. Otherwise it does nothing.
//
// Yield must not run concurrently with any other use of the Store (it
// replaces the bbolt handle). If reopening fails the Store is closed and
// every later call fails.
func (s *Store) Yield() error {
	if s.slice == nil || !s.overdue() {
		return nil
	}
	return s.reopen()
}

// overdue reports whether the running slice should end: it has worked its
// share of the slice budget, or a process waits for the lock (one fcntl).
// Long loops check it every few items, end their transaction there,
// commit, and Yield.
func (s *Store) overdue() bool {
	sl := s.slice
	if sl == nil {
		return false
	}
	sl.mu.Lock()
	now := time.Now()
	up := now.Sub(s.since) >= sl.work
	if up && sl.timeUp.IsZero() {
		sl.timeUp = now
	}
	sl.mu.Unlock()
	return up || announced(sl.probe)
}

// committed learns from each commit (bbolt's spill, page writes and two
// syncs, from commitStart on) how long the next slice may work. What
// follows a slice's work (its index writes and its commit) costs a floor,
// the syncs' latency, which no slice size changes (the least of the last
// commits), plus a part that grows with the pages the slice touched, so
// with the work and with the ledger: k per unit of work, measured on a
// slice that ran out of time.
//
// Where waiters announce themselves, a slice ends as soon as one does, so
// a waiter waits for the index writes and commit of the work done so far,
// never for the rest of the slice: the slice may work while nobody waits,
// as long as what follows it stays within the budget above the floor. The
// next works budget/k (the work whose part above the floor is the
// budget), at most twice the last slice's work (k is measured, not
// known: page rewrites grow less than linearly with the work, so a longer
// slice is measured before it is trusted) and at most maxWorkShares
// budgets. Elsewhere a waiter waits for the whole slice, and the next
// works budget/(1+k), so that the work and the part that grows with it
// stay within the budget however large the ledger gets. Either way at
// least minWorkShare of it.
func (s *Store) committed(commitStart time.Time) {
	sl := s.slice
	if sl == nil {
		return
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	now := time.Now()
	sl.commits[sl.ncommit%len(sl.commits)] = now.Sub(commitStart)
	sl.ncommit++
	if sl.timeUp.IsZero() {
		return
	}
	floor := sl.commits[0]
	for _, c := range sl.commits[:min(sl.ncommit, len(sl.commits))] {
		floor = min(floor, c)
	}
	work := sl.timeUp.Sub(s.since)
	k := max(float64(now.Sub(sl.timeUp)-floor)/float64(work), 0)
	sl.timeUp = time.Time{}
	budget := float64(s.opts.SliceBudget)
	var next float64
	if waitersAnnounce {
		next = min(2*float64(work), maxWorkShares*budget)
		if k > 0 {
			next = min(next, budget/k)
		}
	} else {
		next = budget / (1 + k) // k >= 0: at most the budget
	}
	sl.work = time.Duration(max(next, minWorkShare*budget))
}

// Overdue reports whether this transaction's slice should end (see
// Store.Yield; always false without Options.SliceBudget). A long loop
// checks it every few items, stops there, lets the transaction commit and
// calls Store.Yield before the next.
func (t *Tx) Overdue() bool { return t.s.overdue() }

// reopen releases and retakes the file lock. The file must still be the
// one this Store opened: a ledger deleted or replaced meanwhile is refused,
// never recreated.
func (s *Store) reopen() error {
	probe := s.slice.probe
	before, err := probe.Stat()
	if err != nil {
		return fmt.Errorf("reopen ledger %s: %w", s.path, err)
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("release ledger %s: %w", s.path, err)
	}
	if announced(probe) {
		// Until every announced waiter has the lock (each withdraws its
		// announcement then; opening below waits for them), or handoffMax.
		for t0 := time.Now(); announced(probe) && time.Since(t0) < handoffMax; {
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
	s.slice.mu.Lock()
	s.db, s.since, s.slice.timeUp = db, time.Now(), time.Time{}
	s.slice.mu.Unlock()
	if err := s.checkFile(); err != nil {
		return err
	}
	if err := s.checkFormat(); err != nil || s.opts.ReadOnly {
		return err
	}
	return s.init()
}

// errSliceOver ends one read transaction of ReadStreamSliced.
var errSliceOver = errors.New("slice over")

// ReadStreamSliced is ReadStream in read transactions that end with the
// slice (every 64 events: its share of Options.SliceBudget, or a process
// waiting for the lock), with Yield between them, so that a long stream
// read by a command with a slice budget lets a hook in. Events appended to
// the stream meanwhile are read too, in order, each once. Like Yield it
// must not run concurrently with another use of the Store.
func (s *Store) ReadStreamSliced(ctx context.Context, stream string, after uint64, fn func(e *events.Envelope) error) error {
	for {
		n := 0
		err := s.ReadStream(ctx, stream, after, func(e *events.Envelope) error {
			if n++; n%64 == 0 && s.overdue() {
				return errSliceOver
			}
			if err := fn(e); err != nil {
				return err
			}
			after = e.Version
			return nil
		})
		if !errors.Is(err, errSliceOver) {
			return err
		}
		if err := s.Yield(); err != nil {
			return err
		}
	}
}
