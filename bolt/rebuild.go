package bolt

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/projections"
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

// liveProjections are those whose checkpoint is at the head: only they are
// folded inline. One that is behind (an interrupted rebuild) is left alone
// and caught up on the next Open, so it never sees events out of order.
func (s *Store) liveProjections(tx *bbolt.Tx) []projections.Projection {
	head := tx.Bucket(bucketEvents).Sequence()
	live := make([]projections.Projection, 0, len(s.projs))
	for _, p := range s.projs {
		v, pos, ok := projectionCheckpoint(tx, p.Name())
		if (ok && v == p.Version() && pos == head) || (!ok && head == 0) {
			live = append(live, p)
		}
	}
	return live
}

// catchUp brings every projection to the head: one at another version is
// dropped and refolded, one behind is folded forward.
func (s *Store) catchUp(ctx context.Context) error {
	var stale []projections.Projection
	var from uint64 = ^uint64(0)
	var head uint64
	err := s.update(func(tx *bbolt.Tx) error {
		head = tx.Bucket(bucketEvents).Sequence()
		for _, p := range s.projs {
			v, pos, ok := projectionCheckpoint(tx, p.Name())
			if ok && v == p.Version() && pos == head || !ok && head == 0 {
				if !ok {
					if err := tx.Bucket(bucketProjCP).Put([]byte(p.Name()), checkpoint(p.Version(), 0)); err != nil {
						return err
					}
				}
				continue
			}
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
	return s.fold(ctx, stale, from, head, nil)
}

func dropProjection(tx *bbolt.Tx, p projections.Projection) error {
	if tx.Bucket(projBucket(p.Name())) != nil {
		if err := tx.DeleteBucket(projBucket(p.Name())); err != nil {
			return fmt.Errorf("drop projection %s: %w", p.Name(), err)
		}
	}
	return tx.Bucket(bucketProjCP).Put([]byte(p.Name()), checkpoint(p.Version(), 0))
}

// Progress receives (folded, total) during long folds.
type Progress func(done, total uint64)

// Rebuild drops every projection and refolds it from the first event. It
// runs in chunks; if ctx is cancelled it stops between chunks and returns
// ctx's error, leaving consistent checkpoints that the next Open resumes.
func (s *Store) Rebuild(ctx context.Context, progress Progress) (uint64, error) {
	var head uint64
	err := s.update(func(tx *bbolt.Tx) error {
		head = tx.Bucket(bucketEvents).Sequence()
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
	return head, s.fold(ctx, s.projs, 0, head, progress)
}

// fold applies events (from, head] to projs in chunked write transactions,
// each projection only past its own checkpoint.
func (s *Store) fold(ctx context.Context, projs []projections.Projection, from, head uint64, progress Progress) error {
	next := from + 1
	for next <= head {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := s.update(func(tx *bbolt.Tx) error {
			cps := make([]uint64, len(projs))
			kvs := make([]projections.KV, len(projs))
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
			for k, v := c.Seek(u64(next)); k != nil && n < foldChunk; k, v = c.Next() {
				pos := binary.BigEndian.Uint64(k)
				if pos > head {
					break
				}
				if err := foldOne(projs, kvs, cps, bod, pos, v); err != nil {
					return &CorruptError{Path: s.path, Err: err}
				}
				last = pos
				n++
			}
			for i, p := range projs {
				if cps[i] < last {
					if err := tx.Bucket(bucketProjCP).Put([]byte(p.Name()), checkpoint(p.Version(), last)); err != nil {
						return err
					}
				}
			}
			next = last + 1
			if n == 0 {
				next = head + 1
			}
			return nil
		})
		if err != nil {
			return err
		}
		if progress != nil {
			progress(min(next-1, head), head)
		}
	}
	return nil
}

// foldOne decodes the event at pos only if some projection past its
// checkpoint handles its type.
func foldOne(projs []projections.Projection, kvs []projections.KV, cps []uint64, bod projections.Bodies, pos uint64, raw []byte) error {
	typ, ok := events.PeekType(raw)
	if !ok {
		return fmt.Errorf("position %d: malformed envelope", pos)
	}
	var e events.Envelope
	decoded := false
	for i, p := range projs {
		if pos <= cps[i] || !p.Handles(typ) {
			continue
		}
		if !decoded {
			var err error
			if e, err = events.DecodeStored(raw); err != nil {
				return fmt.Errorf("position %d: %w", pos, err)
			}
			decoded = true
		}
		if err := p.Apply(kvs[i], bod, &e); err != nil {
			return fmt.Errorf("position %d: projection %s: %w", pos, p.Name(), err)
		}
	}
	return nil
}
