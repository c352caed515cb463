package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/fold"
	bbolt "go.etcd.io/bbolt"
)

// foldChunk is how many events one rebuild transaction folds: large enough
// to amortize the commit, small enough to bound memory and to stop promptly
// on cancellation. A crash between chunks leaves a consistent checkpoint.
// bbolt splits nodes only at commit, so a transaction that inserts many
// keys into a fresh bucket is quadratic: the recall index (a few keys per
// memory) took 39 s to rebuild 30,000 memories at 50,000 events per chunk
// and 3 s at 5,000.
const foldChunk = 5_000

// firstFoldChunk is the size of a fold's first chunk; each next one doubles
// up to foldChunk. The first transaction into an empty projection bucket
// inserts into a single leaf that bbolt splits only at commit (each insert
// moves all the keys after it): a small first commit gives the next ones
// many leaves to spread over.
const firstFoldChunk = 500

// projectionCheckpoint reads (version, position) of a projection; ok is false
// when the projection has never been folded.
func projectionCheckpoint(tx *bbolt.Tx, name string) (version int, pos uint64, ok bool) {
	return decodeCheckpoint(tx.Bucket(bucketProjCP).Get([]byte(name)))
}

// decodeCheckpoint reads a value written by checkpoint.
func decodeCheckpoint(v []byte) (version int, pos uint64, ok bool) {
	if len(v) != 16 {
		return 0, 0, false
	}
	return int(binary.BigEndian.Uint64(v)), binary.BigEndian.Uint64(v[8:]), true
}

// atHead reports whether projection p has folded every event of tx: its
// checkpoint is at the head at p's version, or the ledger is empty.
func atHead(tx *bbolt.Tx, p fold.Projection, head uint64) bool {
	v, pos, ok := projectionCheckpoint(tx, p.Name())
	return ok && v == p.Version() && pos == head || !ok && head == 0
}

// liveProjections are those at the head: only they are folded inline. One
// that is behind (an interrupted rebuild, or appends by a process that does
// not register it) is left alone and caught up on the next Open, so it
// never sees events out of order.
func (s *Store) liveProjections(tx *bbolt.Tx) []fold.Projection {
	head := tx.Bucket(bucketEvents).Sequence()
	live := make([]fold.Projection, 0, len(s.projs))
	for _, p := range s.projs {
		if atHead(tx, p, head) {
			live = append(live, p)
		}
	}
	return live
}

// projectionsCurrent reports whether every projection is at the head.
func (s *Store) projectionsCurrent(tx *bbolt.Tx) bool {
	head := tx.Bucket(bucketEvents).Sequence()
	for _, p := range s.projs {
		if !atHead(tx, p, head) {
			return false
		}
	}
	return true
}

// catchUp brings every projection to the head: one at another version is
// dropped and refolded, one behind is folded forward.
func (s *Store) catchUp(ctx context.Context) error {
	var stale []fold.Projection
	var from uint64 = ^uint64(0)
	var head uint64
	err := s.update(func(tx *bbolt.Tx) error {
		head = tx.Bucket(bucketEvents).Sequence()
		for _, p := range s.projs {
			if atHead(tx, p, head) {
				continue
			}
			v, pos, ok := projectionCheckpoint(tx, p.Name())
			if !ok || v != p.Version() {
				if err := dropProjection(tx, p); err != nil {
					return err
				}
				pos = 0
			}
			stale = append(stale, p)
			from = min(from, pos)
		}
		return nil
	})
	if err != nil || len(stale) == 0 {
		return err
	}
	_, err = s.fold(ctx, stale, from, false, nil)
	return err
}

func dropProjection(tx *bbolt.Tx, p fold.Projection) error {
	if tx.Bucket(projBucket(p.Name())) != nil {
		if err := tx.DeleteBucket(projBucket(p.Name())); err != nil {
			return fmt.Errorf("drop projection %s: %w", p.Name(), err)
		}
	}
	return tx.Bucket(bucketProjCP).Put([]byte(p.Name()), checkpoint(p.Version(), 0))
}

// Progress receives (folded, total) during long folds.
type Progress func(done, total uint64)

// bucketRebuild holds a rebuild in progress: each projection's new state
// (sub-bucket p/<name>) and how far it is folded (key cp/<name>, a
// checkpoint). The live projections stay where they are, folded inline by
// every append, until the rebuild reaches the head and swaps its state in.
var bucketRebuild = []byte("rebuild")

func rebuildCPKey(p fold.Projection) []byte { return []byte("cp/" + p.Name()) }

// Rebuild refolds every projection from the first event and returns the
// head it folded to. It folds into a shadow copy (bucketRebuild) in
// chunks, ending a chunk early past Options.SliceBudget and calling Yield
// between chunks, so that other processes (hooks) can use the ledger and
// its live projections meanwhile; the chunk that reaches the head replaces
// the live projections in the same transaction. If ctx is cancelled it
// stops between chunks and returns ctx's error; the live projections are
// untouched and the next Rebuild resumes the shadow where it stopped.
func (s *Store) Rebuild(ctx context.Context, progress Progress) (uint64, error) {
	if len(s.projs) == 0 {
		pos, _, err := s.Head()
		return pos, err
	}
	from := ^uint64(0)
	err := s.update(func(tx *bbolt.Tx) error {
		rb, err := tx.CreateBucketIfNotExists(bucketRebuild)
		if err != nil {
			return fmt.Errorf("rebuild: %w", err)
		}
		for _, p := range s.projs {
			v, pos, ok := decodeCheckpoint(rb.Get(rebuildCPKey(p)))
			if !ok || v != p.Version() {
				// Nothing folded yet, or by another version: start over.
				if rb.Bucket(projBucket(p.Name())) != nil {
					if err := rb.DeleteBucket(projBucket(p.Name())); err != nil {
						return fmt.Errorf("rebuild %s: %w", p.Name(), err)
					}
				}
				if err := rb.Put(rebuildCPKey(p), checkpoint(p.Version(), 0)); err != nil {
					return err
				}
				pos = 0
			}
			from = min(from, pos)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return s.fold(ctx, s.projs, from, true, progress)
}

// shadowAt reports whether a Rebuild's every projection is folded to head.
func shadowAt(tx *bbolt.Tx, projs []fold.Projection, head uint64) bool {
	rb := tx.Bucket(bucketRebuild)
	if rb == nil {
		return false
	}
	for _, p := range projs {
		if _, pos, ok := decodeCheckpoint(rb.Get(rebuildCPKey(p))); !ok || pos < head {
			return false
		}
	}
	return true
}

// swapIn replaces the live projections with the rebuilt ones, which are at
// head, and removes the rebuild's state.
func swapIn(tx *bbolt.Tx, projs []fold.Projection, head uint64) error {
	rb := tx.Bucket(bucketRebuild)
	for _, p := range projs {
		name := projBucket(p.Name())
		if tx.Bucket(name) != nil {
			if err := tx.DeleteBucket(name); err != nil {
				return fmt.Errorf("rebuild %s: drop the old state: %w", p.Name(), err)
			}
		}
		if _, err := rb.CreateBucketIfNotExists(name); err != nil {
			return err
		}
		if err := tx.MoveBucket(name, rb, nil); err != nil {
			return fmt.Errorf("rebuild %s: swap in: %w", p.Name(), err)
		}
		if err := tx.Bucket(bucketProjCP).Put([]byte(p.Name()), checkpoint(p.Version(), head)); err != nil {
			return err
		}
	}
	return tx.DeleteBucket(bucketRebuild)
}

// fold applies events after from to projs in chunked write transactions,
// each projection only past its own checkpoint, until every projection is at
// the head. The head is read inside each transaction, so events appended
// meanwhile (by other goroutines or, between slices, other processes) are
// folded too and the projections end up live. shadow folds a Rebuild's
// copy (bucketRebuild) in slices and swaps it in at the head; otherwise the
// live projections are caught up.
func (s *Store) fold(ctx context.Context, projs []fold.Projection, from uint64, shadow bool, progress Progress) (uint64, error) {
	next := from + 1
	unbounded := make([]uint64, len(projs))
	for i := range unbounded {
		unbounded[i] = ^uint64(0)
	}
	limit := firstFoldChunk
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		var head uint64
		done, swapped := false, false
		err := s.update(func(tx *bbolt.Tx) error {
			head = tx.Bucket(bucketEvents).Sequence()
			if shadow && shadowAt(tx, projs, head) {
				// In a transaction of its own: bbolt moves a bucket as
				// last committed, without changes made in the same tx.
				done, swapped = true, true
				return swapIn(tx, projs, head)
			}
			parent, cps, kvs, err := foldState(tx, projs, shadow)
			if err != nil {
				return err
			}
			bod := bodies{tx.Bucket(bucketBodies)}
			c := tx.Bucket(bucketEvents).Cursor()
			last := next - 1
			n := 0
			var scratch events.Envelope
			var strs events.StringCache
			for k, v := c.Seek(u64(next)); k != nil && n < limit; k, v = c.Next() {
				if shadow && n%64 == 63 && s.overdue() {
					break
				}
				pos := binary.BigEndian.Uint64(k)
				if err := foldOne(projs, kvs, cps, unbounded, bod, pos, v, &scratch, &strs); err != nil {
					return &CorruptError{Path: s.path, Err: err}
				}
				last = pos
				n++
			}
			for _, kv := range kvs {
				if b, ok := kv.(fold.Batch); ok {
					if err := b.Flush(); err != nil {
						return err
					}
				}
			}
			if n == 0 && last < head {
				return &CorruptError{Path: s.path, Err: fmt.Errorf("sequence is %d but no event follows position %d", head, last)}
			}
			for i, p := range projs {
				if last <= cps[i] {
					continue
				}
				var err error
				if shadow {
					err = parent.Put(rebuildCPKey(p), checkpoint(p.Version(), last))
				} else {
					err = tx.Bucket(bucketProjCP).Put([]byte(p.Name()), checkpoint(p.Version(), last))
				}
				if err != nil {
					return err
				}
			}
			next = last + 1
			done = !shadow && last >= head
			return nil
		})
		if err != nil {
			return 0, err
		}
		limit = min(2*limit, foldChunk)
		if progress != nil && !swapped {
			progress(min(next-1, head), head)
		}
		if done {
			return head, nil
		}
		if shadow && next <= head {
			if err := s.Yield(); err != nil {
				return 0, err
			}
		}
	}
}

// foldState opens the buckets fold writes and the checkpoint of each
// projection: the rebuild's shadow (parent is bucketRebuild) or the live
// ones (parent nil).
func foldState(tx *bbolt.Tx, projs []fold.Projection, shadow bool) (parent *bbolt.Bucket, cps []uint64, kvs []fold.KV, err error) {
	if shadow {
		if parent = tx.Bucket(bucketRebuild); parent == nil {
			return nil, nil, nil, errors.New("rebuild: its state was removed by another process")
		}
	}
	cps = make([]uint64, len(projs))
	kvs = make([]fold.KV, len(projs))
	arena := &valueArena{}
	for i, p := range projs {
		var b *bbolt.Bucket
		if shadow {
			_, cps[i], _ = decodeCheckpoint(parent.Get(rebuildCPKey(p)))
			b, err = parent.CreateBucketIfNotExists(projBucket(p.Name()))
		} else {
			_, cps[i], _ = projectionCheckpoint(tx, p.Name())
			b, err = tx.CreateBucketIfNotExists(projBucket(p.Name()))
		}
		if err != nil {
			return nil, nil, nil, err
		}
		kvs[i] = &bucketKV{b: b, a: arena}
		if bp, ok := p.(fold.Batcher); ok {
			kvs[i] = bp.Batch(kvs[i]) // flushed at the end of the chunk
		}
	}
	return parent, cps, kvs, nil
}

// foldOne applies the stored event raw at pos to every projection i with
// from[i] < pos <= to[i] that handles its type. The event is decoded at most
// once, and only if some projection needs it.
//
// e is scratch space reused across calls (one allocation per fold, not per
// event): a projection must not keep the envelope past Apply, which the
// Payload aliasing the transaction's memory forbids anyway. strs shares
// the envelopes' strings across the fold (events.DecodeStoredFold).
func foldOne(projs []fold.Projection, kvs []fold.KV, from, to []uint64, bod fold.Bodies, pos uint64, raw []byte, e *events.Envelope, strs *events.StringCache) error {
	tb, ok := events.PeekTypeBytes(raw)
	if !ok {
		return fmt.Errorf("position %d: malformed envelope", pos)
	}
	typ, ok := events.TypeName(tb)
	if !ok {
		return fmt.Errorf("position %d: %w", pos, &events.UnknownTypeError{Type: string(tb)})
	}
	decoded := false
	for i, p := range projs {
		if pos <= from[i] || pos > to[i] || !p.Handles(typ) {
			continue
		}
		if !decoded {
			var err error
			if *e, err = events.DecodeStoredFold(raw, typ, strs); err != nil {
				return fmt.Errorf("position %d: %w", pos, err)
			}
			decoded = true
		}
		if err := p.Apply(kvs[i], bod, e); err != nil {
			return fmt.Errorf("position %d: projection %s: %w", pos, p.Name(), err)
		}
	}
	return nil
}
