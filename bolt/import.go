package bolt

import (
	"context"
	"errors"
	"fmt"

	"github.com/tree-ring/tree-ring/events"
	bbolt "go.etcd.io/bbolt"
)

// importChunk is how many events one import transaction appends: large
// enough to amortize the two fsyncs of a commit, small enough to bound the
// memory of dirty pages. A variable so tests can use small chunks.
var importChunk = 10_000

// ImportResult counts what Import did.
type ImportResult struct {
	Imported int `json:"imported"`
	Skipped  int `json:"skipped_duplicates"`
}

// ImportError ties an import failure to the envelope that caused it:
// Index is its position in the slice given to Import.
type ImportError struct {
	Index int
	Err   error
}

func (e *ImportError) Error() string { return fmt.Sprintf("event %d: %v", e.Index, e.Err) }
func (e *ImportError) Unwrap() error { return e.Err }

// Import appends envelopes exported from another ledger; they must come
// from events.DecodeEnvelope, which validated them. See ImportProgress.
func (s *Store) Import(ctx context.Context, envs []events.Envelope) (ImportResult, error) {
	return s.ImportProgress(ctx, envs, nil)
}

// ImportProgress is Import reporting (done, total) after each chunk.
//
// Foreign ids are kept; version, position and hashes are reassigned so the
// events chain in this ledger, in the order given. An id already present
// with the same content (in the ledger or earlier in envs) is skipped; an id
// present with different content refuses the whole import before anything
// is written (*ImportError wrapping *IDConflictError). Large imports are
// appended in chunks of at most importChunk events, each atomic, ended
// early when the slice is over (Options.SliceBudget; a waiting process),
// with Store.Yield between them; a retry after an interruption skips what
// landed (by id).
// CheckImport refuses, without writing, what ImportProgress would refuse up
// front (an id present with different content, in the ledger or in envs),
// then, when admit is not nil, asks it in the read transaction that
// finished the check (importPlan), with which envelopes are already
// present (same id, same content). A caller
// that records something before importing (a run) checks first, so that a
// bad file still changes nothing.
func (s *Store) CheckImport(envs []events.Envelope, admit func(r *Reader, present []bool) error) error {
	_, _, _, err := s.importPlan(envs, func(tx *bbolt.Tx, present []bool) error {
		if admit == nil {
			return nil
		}
		return admit(&Reader{s: s, tx: tx}, present)
	})
	return err
}

func (s *Store) ImportProgress(ctx context.Context, envs []events.Envelope, progress Progress) (ImportResult, error) {
	var res ImportResult
	// Refuse conflicts up front so a bad file changes nothing.
	// seen is the head when the plan began, then after each of our commits.
	skip, inFile, seen, err := s.importPlan(envs, nil)
	if err != nil {
		return res, err
	}
	for start := 0; start < len(envs); {
		end := start
		var imported, skipped int
		var head uint64
		err := s.Update(ctx, func(tx *Tx) error {
			imported, skipped = 0, 0
			// Events appended by others since our last look (another
			// process between slices, another goroutine) may be some of
			// ours: skip those, as the plan would have.
			if err := tx.skipLanded(seen, envs, inFile, skip, start); err != nil {
				return err
			}
			defer func() { head = tx.events.Sequence() }()
			tx.pending.reserve(min(importChunk, len(envs)-start))
			runStart := -1 // a run of new events of one stream, appended together
			flush := func(i int) error {
				if runStart < 0 {
					return nil
				}
				if err := tx.appendNew(envs[runStart].Stream, envs[runStart:i]); err != nil {
					return &ImportError{Index: runStart, Err: err}
				}
				imported += i - runStart
				runStart = -1
				return nil
			}
			limit := min(start+importChunk, len(envs))
			i := start
			for ; i < limit; i++ {
				// A slice ends when the lock was held long enough.
				if (i-start)%64 == 63 && tx.Overdue() {
					break
				}
				if skip[i] {
					// A run is a contiguous slice: end it here.
					if err := flush(i); err != nil {
						return err
					}
					skipped++
					continue
				}
				if runStart >= 0 && envs[runStart].Stream != envs[i].Stream {
					if err := flush(i); err != nil {
						return err
					}
				}
				if runStart < 0 {
					runStart = i
				}
			}
			end = i
			return flush(end)
		})
		if err != nil {
			return res, err
		}
		seen = head
		res.Imported += imported
		res.Skipped += skipped
		start = end
		if progress != nil {
			progress(uint64(end), uint64(len(envs)))
		}
		if end < len(envs) {
			if err := s.Yield(); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// skipLanded marks to skip the envelopes from index from on that others
// appended after position seen: an id there with other content is a
// conflict, found only now.
func (t *Tx) skipLanded(seen uint64, envs []events.Envelope, inFile map[[16]byte]int, skip []bool, from int) error {
	if t.events.Sequence() == seen {
		return nil
	}
	c := t.events.Cursor()
	for k, v := c.Seek(u64(seen + 1)); k != nil; k, v = c.Next() {
		stored, err := events.DecodeStoredRef(v)
		if err != nil {
			return &CorruptError{Path: t.s.path, Err: err}
		}
		i, ok := inFile[stored.ID]
		if !ok || i < from || skip[i] {
			continue
		}
		if !events.SameContent(&stored, &envs[i]) {
			return &ImportError{Index: i, Err: &IDConflictError{ID: stored.ID.String(), Position: stored.Position}}
		}
		skip[i] = true
	}
	return nil
}

// importPlan checks every envelope against the ledger and the ones before
// it, and marks those to skip (already present with the same content). It
// returns where each id first appears in envs and the head when it began.
// It reads in transactions that end with the slice (Store.Yield between
// them: a plan of a million ids takes seconds); last, when not nil, runs
// in the one that finishes it. An event others append between two of
// them is found by the later ones or, for ids already checked, by the
// import's skipLanded, which reads from the returned head on.
func (s *Store) importPlan(envs []events.Envelope, last func(tx *bbolt.Tx, skip []bool) error) (skip []bool, inFile map[[16]byte]int, seen uint64, err error) {
	skip = make([]bool, len(envs))
	inFile = make(map[[16]byte]int, len(envs))
	for from, first := 0, true; ; first = false {
		err = s.view(func(tx *bbolt.Tx) error {
			if first {
				seen = tx.Bucket(bucketEvents).Sequence()
			}
			var err error
			if from, err = s.planFrom(tx, envs, skip, inFile, from); err != nil || from < len(envs) || last == nil {
				return err
			}
			return last(tx, skip)
		})
		if err != nil {
			return nil, nil, 0, err
		}
		if from == len(envs) {
			return skip, inFile, seen, nil
		}
		if err := s.Yield(); err != nil {
			return nil, nil, 0, err
		}
	}
}

// planFrom plans envs[from:] in tx until the slice is over; it returns
// where it stopped.
func (s *Store) planFrom(tx *bbolt.Tx, envs []events.Envelope, skip []bool, inFile map[[16]byte]int, from int) (int, error) {
	ids := idIndex{b: tx.Bucket(bucketIDBlocks)}
	evb := tx.Bucket(bucketEvents)
	for i := from; i < len(envs); i++ {
		if (i-from)%1024 == 1023 && s.overdue() {
			return i, nil
		}
		e := &envs[i]
		if j, dup := inFile[e.ID]; dup {
			if !events.SameContent(&envs[j], e) {
				return 0, &ImportError{Index: i, Err: &InputConflictError{ID: e.ID.String(), First: j}}
			}
			skip[i] = true
			continue
		}
		inFile[e.ID] = i
		p, ok, err := ids.get(e.ID[:])
		if err != nil {
			return 0, s.indexErr(err)
		}
		if !ok {
			continue
		}
		stored, err := events.DecodeStoredRef(evb.Get(u64(p)))
		if err != nil {
			return 0, &CorruptError{Path: s.path, Err: err}
		}
		if !events.SameContent(&stored, e) {
			return 0, &ImportError{Index: i, Err: &IDConflictError{ID: e.ID.String(), Position: stored.Position}}
		}
		skip[i] = true
	}
	return len(envs), nil
}

// IsConflict reports whether err is an id or batch conflict.
func IsConflict(err error) bool {
	var c *IDConflictError
	var b *BatchConflictError
	var in *InputConflictError
	return errors.As(err, &c) || errors.As(err, &b) || errors.As(err, &in)
}

// reseal is encode for an imported envelope that moves to other chain
// values (events.Envelope.ResealStored): it seals e at version, position
// and prev and appends its stored form to the arena; nil (e unchanged)
// when e was not read from its stored form.
func (a *valueArena) reseal(e *events.Envelope, version, position uint64, prev string, scratch []byte) ([]byte, []byte) {
	n := e.EncodedSizeBound()
	start, inSlab := a.room(n)
	dst := a.slab
	if !inSlab {
		dst = make([]byte, 0, n)
	}
	out, scratch, ok := e.ResealStored(version, position, prev, scratch, dst)
	if !ok {
		return nil, scratch
	}
	if inSlab {
		a.slab = out
	}
	return out[start:len(out):len(out)], scratch
}
