package bolt

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/projections"
	bbolt "go.etcd.io/bbolt"
)

// Tx is one atomic unit of work on the ledger: appends to any number of
// streams, memory bodies and projection reads, committed together or not at
// all. A Tx is valid only inside the Update callback that received it and
// must not be used from other goroutines.
type Tx struct {
	s      *Store
	tx     *bbolt.Tx
	events *bbolt.Bucket
	head   string // chain head within this tx
	dirty  bool
	live   []projections.Projection // projections at the head, folded inline
	scrub  bool                     // a body was deleted: scrub free pages after commit
}

// Update runs fn in one write transaction. If fn returns an error, nothing it
// did is kept. Projections are folded inline as events are appended.
func (s *Store) Update(ctx context.Context, fn func(tx *Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	scrub := false
	err := s.update(func(btx *bbolt.Tx) error {
		t := &Tx{s: s, tx: btx, events: btx.Bucket(bucketEvents), live: s.liveProjections(btx)}
		defer func() { scrub = t.scrub }()
		t.events.FillPercent = 1.0
		t.head = string(btx.Bucket(bucketMeta).Get(keyChainHead))
		if err := fn(t); err != nil {
			return err
		}
		if !t.dirty {
			return nil
		}
		pos := t.events.Sequence()
		cp := btx.Bucket(bucketProjCP)
		for _, p := range t.live {
			if err := cp.Put([]byte(p.Name()), checkpoint(p.Version(), pos)); err != nil {
				return err
			}
		}
		return btx.Bucket(bucketMeta).Put(keyChainHead, []byte(t.head))
	})
	if err == nil && scrub {
		if err := s.scrubFreePages(); err != nil {
			return fmt.Errorf("deleted body committed, but scrubbing free pages failed: %w", err)
		}
	}
	return err
}

// Append appends evs to stream in one transaction; see Tx.Append.
func (s *Store) Append(ctx context.Context, stream string, expected int64, evs ...events.Envelope) ([]uint64, error) {
	var pos []uint64
	err := s.Update(ctx, func(tx *Tx) error {
		var err error
		pos, err = tx.Append(stream, expected, evs...)
		return err
	})
	return pos, err
}

// Append adds evs to the end of stream and returns their global positions.
//
// expected is the stream's version before this append (0: the stream must
// not exist yet) or AnyVersion. A mismatch returns *WrongExpectedVersionError.
// Append is idempotent by event id: if every id is already in the ledger with
// the same content, nothing is appended and the original positions are
// returned whatever the stream's version is now (a retry after an unknown
// outcome). An id present with different content, or a batch only partly
// present, returns *IDConflictError.
//
// The envelopes must come from events.Factory.New or events.DecodeEnvelope,
// which validate the payloads; Append assigns Version, Position, PrevHash
// and Hash, extending the SHA-256 chain.
func (t *Tx) Append(stream string, expected int64, evs ...events.Envelope) ([]uint64, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	if err := events.ValidStream(stream); err != nil {
		return nil, fmt.Errorf("append %s: %w", stream, err)
	}
	ids := t.tx.Bucket(bucketIDs)
	positions := make([]uint64, len(evs))
	seen := 0
	for i := range evs {
		if evs[i].Stream != stream {
			return nil, fmt.Errorf("append %s: event %s is for stream %s", stream, evs[i].ID, evs[i].Stream)
		}
		if v := ids.Get(evs[i].ID[:]); v != nil {
			p := binary.BigEndian.Uint64(v)
			stored, err := events.DecodeStored(t.events.Get(v))
			if err != nil {
				return nil, &CorruptError{Path: t.s.path, Err: fmt.Errorf("position %d: %w", p, err)}
			}
			if !events.SameContent(&stored, &evs[i]) {
				return nil, &IDConflictError{ID: evs[i].ID.String(), Position: p}
			}
			positions[i] = p
			seen++
		}
	}
	if seen == len(evs) {
		return positions, nil
	}
	if seen != 0 {
		return nil, fmt.Errorf("append %s: %w", stream, &IDConflictError{ID: "batch", Position: 0})
	}
	h := getHead(t.tx, stream)
	if expected != AnyVersion && uint64(expected) != h.version {
		return nil, &WrongExpectedVersionError{Stream: stream, Expected: expected, Actual: h.version}
	}
	streams := t.tx.Bucket(bucketStreams)
	for i := range evs {
		e := evs[i]
		if _, ok := events.Lookup(e.Type); !ok {
			return nil, fmt.Errorf("append %s@%d: %w", stream, h.version+1, &events.UnknownTypeError{Type: e.Type})
		}
		pos, err := t.events.NextSequence()
		if err != nil {
			return nil, fmt.Errorf("append %s@%d: next sequence: %w", stream, h.version+1, err)
		}
		h.version++
		h.position = pos
		e.Version, e.Position = h.version, pos
		e.Seal(t.head)
		enc := e.Encode()
		if len(enc) > events.MaxEnvelopeBytes {
			return nil, fmt.Errorf("append %s@%d: envelope is %d bytes, limit %d", stream, e.Version, len(enc), events.MaxEnvelopeBytes)
		}
		if ids.Get(e.ID[:]) != nil {
			return nil, &IDConflictError{ID: e.ID.String(), Position: pos}
		}
		pk := u64(pos)
		if err := t.events.Put(pk, enc); err != nil {
			return nil, fmt.Errorf("append %s@%d: %w", stream, e.Version, err)
		}
		if err := streams.Put(streamKey(stream, e.Version), pk); err != nil {
			return nil, fmt.Errorf("append %s@%d: %w", stream, e.Version, err)
		}
		if err := ids.Put(append([]byte(nil), e.ID[:]...), pk); err != nil {
			return nil, fmt.Errorf("append %s@%d: %w", stream, e.Version, err)
		}
		if err := t.apply(&e); err != nil {
			return nil, fmt.Errorf("append %s@%d: %w", stream, e.Version, err)
		}
		t.head = e.Hash
		positions[i] = pos
	}
	hv := make([]byte, 16)
	binary.BigEndian.PutUint64(hv, h.version)
	binary.BigEndian.PutUint64(hv[8:], h.position)
	if err := t.tx.Bucket(bucketHeads).Put([]byte(stream), hv); err != nil {
		return nil, fmt.Errorf("append %s: head: %w", stream, err)
	}
	t.dirty = true
	return positions, nil
}

// apply folds e into every projection that handles its type.
func (t *Tx) apply(e *events.Envelope) error {
	for _, p := range t.live {
		if !p.Handles(e.Type) {
			continue
		}
		b, err := t.tx.CreateBucketIfNotExists(projBucket(p.Name()))
		if err != nil {
			return fmt.Errorf("projection %s: %w", p.Name(), err)
		}
		if err := p.Apply(bucketKV{b}, bodies{t.tx.Bucket(bucketBodies)}, e); err != nil {
			return fmt.Errorf("projection %s: %w", p.Name(), err)
		}
	}
	return nil
}

// StreamVersion is the current version of stream in this transaction (0
// when it does not exist).
func (t *Tx) StreamVersion(stream string) uint64 { return getHead(t.tx, stream).version }

// HasID reports whether an event id is already in the ledger.
func (t *Tx) HasID(id [16]byte) bool { return t.tx.Bucket(bucketIDs).Get(id[:]) != nil }

// PutBody stores text in the content-addressed bodies bucket and returns its
// SHA-256 (lowercase hex). Storing the same text twice is a no-op.
func (t *Tx) PutBody(text []byte) (string, error) {
	sum := sha256.Sum256(text)
	d := hex.EncodeToString(sum[:])
	b := t.tx.Bucket(bucketBodies)
	if b.Get([]byte(d)) != nil {
		return d, nil
	}
	if err := b.Put([]byte(d), append([]byte(nil), text...)); err != nil {
		return "", fmt.Errorf("put body %s: %w", d[:12], err)
	}
	return d, nil
}

// DeleteBody removes a body for good. The events that reference its digest
// stay, so the hash chain still verifies. After the transaction commits,
// Update overwrites every free page of the file (see scrubFreePages), so no
// byte of the text remains in the ledger.
func (t *Tx) DeleteBody(digest string) error {
	if err := t.tx.Bucket(bucketBodies).Delete([]byte(digest)); err != nil {
		return fmt.Errorf("delete body %.12s: %w", digest, err)
	}
	t.scrub = true
	return nil
}

// Body returns a stored body (nil when absent), valid during the tx.
func (t *Tx) Body(digest string) []byte { return t.tx.Bucket(bucketBodies).Get([]byte(digest)) }

// Projection gives read access to a projection's state in this transaction,
// including events appended earlier in it. Writes return an error: only
// folds write projections.
func (t *Tx) Projection(name string) projections.KV {
	return readOnlyKV{t.tx.Bucket(projBucket(name))}
}

func checkpoint(version int, pos uint64) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, uint64(version))
	binary.BigEndian.PutUint64(b[8:], pos)
	return b
}

// bucketKV adapts a bbolt bucket to projections.KV.
type bucketKV struct{ b *bbolt.Bucket }

func (k bucketKV) Get(key []byte) []byte { return k.b.Get(key) }
func (k bucketKV) Put(key, value []byte) error {
	return k.b.Put(append([]byte(nil), key...), append([]byte(nil), value...))
}
func (k bucketKV) Delete(key []byte) error { return k.b.Delete(key) }
func (k bucketKV) ForEach(prefix []byte, fn func(k, v []byte) error) error {
	c := k.b.Cursor()
	for key, v := c.Seek(prefix); key != nil && hasPrefix(key, prefix); key, v = c.Next() {
		if err := fn(key, v); err != nil {
			return err
		}
	}
	return nil
}

var errReadOnlyKV = errors.New("projection state is read-only outside its fold")

// readOnlyKV is a projection bucket seen from outside the fold. A nil bucket
// (projection never written) reads as empty.
type readOnlyKV struct{ b *bbolt.Bucket }

func (k readOnlyKV) Get(key []byte) []byte {
	if k.b == nil {
		return nil
	}
	return k.b.Get(key)
}
func (k readOnlyKV) Put(key, value []byte) error { return errReadOnlyKV }
func (k readOnlyKV) Delete(key []byte) error     { return errReadOnlyKV }
func (k readOnlyKV) ForEach(prefix []byte, fn func(k, v []byte) error) error {
	if k.b == nil {
		return nil
	}
	return bucketKV(k).ForEach(prefix, fn)
}

type bodies struct{ b *bbolt.Bucket }

func (b bodies) Body(d string) []byte {
	if b.b == nil {
		return nil
	}
	return b.b.Get([]byte(d))
}

func hasPrefix(k, p []byte) bool { return len(k) >= len(p) && string(k[:len(p)]) == string(p) }
