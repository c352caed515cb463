package bolt

import (
	"context"
	"encoding/binary"
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

// projectionCheckpoint reads (version, position) of a projection; ok is false
// when the projection has never been folded.
func projectionCheckpoint(tx *bbolt.Tx, name string) (version int, pos uint64, ok bool) {
	v := tx.Bucket(bucketProjCP).Get([]byte(name))
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
	_, err = s.fold(ctx, stale, from, nil)
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

// Rebuild drops every projection and refolds it from the first event; it
// returns the head it folded to. It runs in chunks; if ctx is cancelled it stops between chunks and returns
// ctx's error, leaving consistent checkpoints that the next Open resumes.
func (s *Store) Rebuild(ctx context.Context, progress Progress) (uint64, error) {
	if len(s.projs) == 0 {
		pos, _, err := s.Head()
		return pos, err
	}
	err := s.update(func(tx *bbolt.Tx) error {
		for _, p := range s.projs {
			if err := dropProjection(tx, p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return s.fold(ctx, s.projs, 0, progress)
}

// fold applies events after from to projs in chunked write transactions,
// each projection only past its own checkpoint, until every projection is at
// the head. The head is read inside each transaction, so events appended
// meanwhile (by other goroutines) are folded too and the projections end up
// live.
func (s *Store) fold(ctx context.Context, projs []fold.Projection, from uint64, progress Progress) (uint64, error) {
	next := from + 1
	unbounded := make([]uint64, len(projs))
	for i := range unbounded {
		unbounded[i] = ^uint64(0)
	}
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		var head uint64
		done := false
		err := s.update(func(tx *bbolt.Tx) error {
			head = tx.Bucket(bucketEvents).Sequence()
			cps := make([]uint64, len(projs))
			kvs := make([]fold.KV, len(projs))
			for i, p := range projs {
				_, cps[i], _ = projectionCheckpoint(tx, p.Name())
				b, err := tx.CreateBucketIfNotExists(projBucket(p.Name()))
				if err != nil {
					return err
				}
				kvs[i] = bucketKV{b}
			}
			bod := bodies{tx.Bucket(bucketBodies)}
			c := tx.Bucket(bucketEvents).Cursor()
			last := next - 1
			n := 0
			var scratch events.Envelope
			for k, v := c.Seek(u64(next)); k != nil && n < foldChunk; k, v = c.Next() {
				pos := binary.BigEndian.Uint64(k)
				if err := foldOne(projs, kvs, cps, unbounded, bod, pos, v, &scratch); err != nil {
					return &CorruptError{Path: s.path, Err: err}
				}
				last = pos
				n++
			}
			if n == 0 && last < head {
				return &CorruptError{Path: s.path, Err: fmt.Errorf("sequence is %d but no event follows position %d", head, last)}
			}
			for i, p := range projs {
				if last > cps[i] {
					if err := tx.Bucket(bucketProjCP).Put([]byte(p.Name()), checkpoint(p.Version(), last)); err != nil {
						return err
					}
				}
			}
			next = last + 1
			done = last >= head
			return nil
		})
		if err != nil {
			return 0, err
		}
		if progress != nil {
			progress(min(next-1, head), head)
		}
		if done {
			return head, nil
		}
	}
}

// foldOne applies the stored event raw at pos to every projection i with
// from[i] < pos <= to[i] that handles its type. The event is decoded at most
// once, and only if some projection needs it.
//
// e is scratch space reused across calls (one allocation per fold, not per
// event): a projection must not keep the envelope past Apply, which the
// Payload aliasing the transaction's memory forbids anyway.
func foldOne(projs []fold.Projection, kvs []fold.KV, from, to []uint64, bod fold.Bodies, pos uint64, raw []byte, e *events.Envelope) error {
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
			if *e, err = events.DecodeStoredRef(raw); err != nil {
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
