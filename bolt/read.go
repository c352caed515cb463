package bolt

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/fold"
	bbolt "go.etcd.io/bbolt"
)

// readChunk bounds how many events one read transaction visits, so a long
// scan never pins pages or blocks a writer's remap for long.
const readChunk = 10_000

// Reader is a consistent snapshot of the ledger, valid only inside the View
// callback that received it.
type Reader struct {
	s      *Store
	tx     *bbolt.Tx
	bodies *bbolt.Bucket // opened on the first Body
	br     bodyReader
	unpack eventBuf
}

// View runs fn on a read-only snapshot.
func (s *Store) View(fn func(r *Reader) error) error {
	return s.view(func(tx *bbolt.Tx) error { return fn(&Reader{s: s, tx: tx}) })
}

// Projection returns a read-only view of a projection's state.
func (r *Reader) Projection(name string) fold.KV {
	return &readOnlyKV{b: r.tx.Bucket(projBucket(name))}
}

// Body returns a stored memory body, nil when absent or deleted.
func (r *Reader) Body(digest string) []byte {
	if r.bodies == nil {
		r.bodies = r.tx.Bucket(bucketBodies)
	}
	return r.br.get(r.bodies, digest)
}

// Head returns the last position and the chain head hash.
func (r *Reader) Head() (uint64, string) {
	return r.tx.Bucket(bucketEvents).Sequence(), string(r.tx.Bucket(bucketMeta).Get(keyChainHead))
}

// StreamVersion is the current version of stream (0 when absent).
func (r *Reader) StreamVersion(stream string) uint64 {
	return getHead(r.tx.Bucket(bucketHeads), stream).version
}

// Event returns the event at a position.
func (r *Reader) Event(pos uint64) (events.Envelope, bool, error) {
	v := r.tx.Bucket(bucketEvents).Get(u64(pos))
	if v == nil {
		return events.Envelope{}, false, nil
	}
	e, err := stored(r.s.path, &r.unpack, pos, v)
	if err != nil {
		return events.Envelope{}, false, err
	}
	return e, true, nil
}

// Head returns the last position and chain head.
func (s *Store) Head() (pos uint64, hash string, err error) {
	err = s.View(func(r *Reader) error { pos, hash = r.Head(); return nil })
	return pos, hash, err
}

// ScanRaw calls fn with the stored bytes of every event after position
// `after`, in position order, in bounded read transactions. raw is valid only
// during the call. It stops early when fn returns an error or ctx is done.
func (s *Store) ScanRaw(ctx context.Context, after uint64, fn func(pos uint64, raw []byte) error) error {
	next := after + 1
	var buf eventBuf
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := 0
		err := s.view(func(tx *bbolt.Tx) error {
			c := tx.Bucket(bucketEvents).Cursor()
			for k, v := c.Seek(u64(next)); k != nil && n < readChunk; k, v = c.Next() {
				pos := binary.BigEndian.Uint64(k)
				raw, err := buf.bytes(v)
				if err != nil {
					return &CorruptError{Path: s.path, Err: fmt.Errorf("position %d: %w", pos, err)}
				}
				if err := fn(pos, raw); err != nil {
					return err
				}
				next = pos + 1
				n++
			}
			return nil
		})
		if err != nil || n < readChunk {
			return err
		}
	}
}

// ReadAll decodes every event after position `after`, in order.
func (s *Store) ReadAll(ctx context.Context, after uint64, fn func(e *events.Envelope) error) error {
	return s.ScanRaw(ctx, after, func(pos uint64, raw []byte) error {
		e, err := events.DecodeStored(raw)
		if err != nil {
			return &CorruptError{Path: s.path, Err: fmt.Errorf("position %d: %w", pos, err)}
		}
		return fn(&e)
	})
}

// ReadStream decodes the events of one stream with version > after, in order.
func (s *Store) ReadStream(ctx context.Context, stream string, after uint64, fn func(e *events.Envelope) error) error {
	return s.view(func(tx *bbolt.Tx) error {
		evb := tx.Bucket(bucketEvents)
		var buf eventBuf
		err := forStream(tx.Bucket(bucketStreamBlocks), stream, after, func(_, pos uint64) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			e, err := stored(s.path, &buf, pos, evb.Get(u64(pos)))
			if err != nil {
				return err
			}
			return fn(&e)
		})
		return s.indexErr(err)
	})
}
