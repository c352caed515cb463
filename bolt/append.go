package bolt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/oklog/ulid/v2"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/fold"
	bbolt "go.etcd.io/bbolt"
)

// Tx is one atomic unit of work on the ledger: appends to any number of
// streams, memory bodies and projection reads, committed together or not at
// all. A Tx is valid only inside the Update callback that received it and
// must not be used from other goroutines.
//
// Errors that Append returns before it writes (a wrong expected version, an
// id conflict, an invalid event) leave the Tx as it was: the callback may
// handle them and go on. An error after Append started writing (a failing
// projection, bbolt itself) poisons the Tx: Update then fails and rolls
// back even if the callback swallowed the error, so a half-written append
// can never commit.
type Tx struct {
	s       *Store
	tx      *bbolt.Tx
	events  *bbolt.Bucket
	ids     idIndex       // id_blocks as of the transaction's start
	streams *bbolt.Bucket // stream_blocks
	heads   *bbolt.Bucket
	bodies  *bbolt.Bucket
	// bodyReader serves Body; its cursor repositions from the root on
	// every read, so it sees bodies put earlier in the tx.
	bodyReader bodyReader
	last       lastBody
	head       string // chain head within this tx
	// newHeads holds the stream heads this tx moved; they are written once
	// at commit (a stream appended to many times is written once).
	newHeads map[string]head
	// pending are the index entries of this tx's appends, written at
	// commit, each touched block once (see indexWriter).
	pending indexWriter
	dirty   bool  // events appended: checkpoints, heads and chain head to write
	wrote   bool  // anything written at all
	err     error // poison, see above
	live    []fold.Projection
	liveKV  []fold.KV       // live[i]'s bucket or batch, opened by its first fold
	scrub   bool            // a body was deleted: scrub free pages after commit
	key     [8]byte         // scratch for an events key
	canon   []byte          // scratch for the canonical bytes a seal hashes
	enc     []byte          // scratch for an envelope's stored form, before packing
	unpack  eventBuf        // a stored envelope read back (storedRef)
	pack    bool            // the ledger is format 3: event values are packed (storedValue)
	packer  *importPacker   // set during an import chunk of a format-3 ledger: puts the event values
	folded  events.Envelope // scratch: the envelope the folds get (apply)
	// arena backs the stored envelopes and projection values put in this
	// tx (bbolt keeps the slices until commit).
	arena valueArena
	// batches hold the writes of projections that fold a transaction in
	// one batch (fold.Batcher), by name; flushed before commit.
	batches map[string]fold.Batch
}

// errNothingWritten rolls back a transaction that changed nothing, so an
// idempotent retry or a read-only callback costs no commit (no fsync).
var errNothingWritten = errors.New("nothing written")

// Update runs fn in one write transaction. If fn returns an error, nothing it
// did is kept. Projections are folded inline as events are appended.
func (s *Store) Update(ctx context.Context, fn func(tx *Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	scrub := false
	err := s.update(func(btx *bbolt.Tx) error {
		t := &Tx{
			s: s, tx: btx, events: btx.Bucket(bucketEvents), ids: idIndex{b: btx.Bucket(bucketIDBlocks)},
			streams: btx.Bucket(bucketStreamBlocks), heads: btx.Bucket(bucketHeads), bodies: btx.Bucket(bucketBodies),
			live: s.liveProjections(btx),
		}
		defer func() { scrub = t.scrub }()
		// FillPercent is not persisted: set it in every tx. Positions only
		// ever grow, so full pages never need to split again; stream
		// versions grow within each stream, so its index pages are filled
		// from the left too (measured: 0.9 halves its cost against the
		// default 0.5 with 1,000 interleaved streams). Heads are keyed by
		// stream, and new streams (memory/<time-ordered id>) mostly come
		// last: 0.9 took them from 49 to 88 % of their pages after a
		// memory import. Buckets keyed at random places (bodies by digest,
		// projections) keep 0.5: there a fuller split leaves a remainder
		// page per split and measured emptier (54 against 67 %).
		t.events.FillPercent = 1.0
		t.streams.FillPercent = 0.9
		t.ids.b.FillPercent = 0.9
		t.heads.FillPercent = 0.9
		m := btx.Bucket(bucketMeta)
		t.head = string(m.Get(keyChainHead))
		t.pack = string(m.Get(keyFormat)) == FormatVersion
		ferr := fn(t)
		switch {
		case ferr != nil:
			return ferr
		case t.err != nil:
			return t.err
		case !t.wrote:
			return errNothingWritten
		case !t.dirty:
			return nil // no event appended: no fold ran, no batch holds writes
		}
		if err := t.flushBatches(); err != nil {
			return err
		}
		if err := t.pending.flush(t.ids.b, t.streams, &t.arena); err != nil {
			return fmt.Errorf("index: %w", t.s.indexErr(err))
		}
		if err := t.flushHeads(); err != nil {
			return err
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
	if err == errNothingWritten {
		return nil
	}
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
	if err != nil {
		return nil, err
	}
	return pos, nil
}

// Append adds evs to the end of stream and returns their global positions.
//
// expected is the stream's version before this append (0: the stream must
// not exist yet) or AnyVersion. A mismatch returns *WrongExpectedVersionError.
//
// Append is idempotent by event id: if every id is already in the ledger
// with the same content, nothing is appended and the original positions are
// returned whatever the stream's version is now (a retry after an unknown
// outcome). An id present with different content returns *IDConflictError;
// a batch only partly present, or one id twice in the batch, returns
// *BatchConflictError (a retry must resend the same batch).
//
// Every event is validated (events.Envelope.Validate): a ledger never holds
// an event that verify would reject. Append assigns Version, Position,
// PrevHash and Hash, extending the SHA-256 chain.
func (t *Tx) Append(stream string, expected int64, evs ...events.Envelope) ([]uint64, error) {
	if t.err != nil {
		return nil, t.err
	}
	if len(evs) == 0 {
		return nil, nil
	}
	if err := events.ValidStream(stream); err != nil {
		return nil, fmt.Errorf("append %s: %w", stream, err)
	}
	if expected < AnyVersion {
		return nil, fmt.Errorf("append %s: expected version %d is neither a version nor AnyVersion", stream, expected)
	}
	// Checks first: nothing below returns before writing starts.
	positions := make([]uint64, len(evs))
	present, firstPresent, firstNew := 0, -1, -1
	for i := range evs {
		e := &evs[i]
		if e.Stream != stream {
			return nil, fmt.Errorf("append %s: event %s is for stream %s", stream, e.ID, e.Stream)
		}
		if j := dupIn(evs[:i], e.ID); j >= 0 {
			return nil, &BatchConflictError{Stream: stream, ID: e.ID.String(), Reason: fmt.Sprintf("appears twice in the batch (events %d and %d)", j, i)}
		}
		p, ok, err := t.lookupID(e.ID)
		if err != nil {
			return nil, err
		}
		if !ok {
			if firstNew < 0 {
				firstNew = i
			}
			continue
		}
		stored, err := t.storedRef(p, t.events.Get(u64(p)))
		if err != nil {
			return nil, err
		}
		if !events.SameContent(&stored, e) {
			return nil, &IDConflictError{ID: e.ID.String(), Position: p}
		}
		positions[i] = p
		present++
		if firstPresent < 0 {
			firstPresent = i
		}
	}
	if present == len(evs) {
		return positions, nil
	}
	if present != 0 {
		return nil, &BatchConflictError{Stream: stream, ID: evs[firstPresent].ID.String(),
			Reason: fmt.Sprintf("is already at position %d but %s is new: a retry must resend the same batch", positions[firstPresent], evs[firstNew].ID)}
	}
	h := t.streamHead(stream)
	if expected != AnyVersion && uint64(expected) != h.version {
		return nil, &WrongExpectedVersionError{Stream: stream, Expected: expected, Actual: h.version}
	}
	for i := range evs {
		if err := evs[i].Validate(); err != nil {
			return nil, fmt.Errorf("append %s@%d: %w", stream, h.version+uint64(i)+1, err)
		}
	}
	// Writes: a failure from here on poisons the transaction.
	if err := t.write(stream, h, evs, positions, len(evs) > 64); err != nil {
		t.err = err
		return nil, err
	}
	return positions, nil
}

// lookupID finds an id appended earlier in this tx or in the ledger.
func (t *Tx) lookupID(id [16]byte) (uint64, bool, error) {
	if p, ok := t.pending.id(id); ok {
		return p, true, nil
	}
	p, ok, err := t.ids.get(id[:])
	if err != nil {
		return 0, false, t.s.indexErr(err)
	}
	return p, ok, nil
}

// streamHead is the head of stream as of this tx.
func (t *Tx) streamHead(stream string) head {
	if h, ok := t.newHeads[stream]; ok {
		return h
	}
	return getHead(t.heads, stream)
}

// moveHead records stream's new head (written at commit by flushHeads).
func (t *Tx) moveHead(stream string, h head) {
	if t.newHeads == nil {
		t.newHeads = map[string]head{}
	}
	t.newHeads[stream] = h
	t.dirty = true
}

// flushHeads writes the heads moved in this tx, in key order.
func (t *Tx) flushHeads() error {
	for _, name := range slices.Sorted(maps.Keys(t.newHeads)) {
		if err := putHead(t.heads, name, t.newHeads[name]); err != nil {
			return err
		}
	}
	return nil
}

// putHead writes stream's head.
func putHead(heads *bbolt.Bucket, stream string, h head) error {
	hv := make([]byte, 16)
	binary.BigEndian.PutUint64(hv, h.version)
	binary.BigEndian.PutUint64(hv[8:], h.position)
	if err := heads.Put([]byte(stream), hv); err != nil {
		return fmt.Errorf("head of %s: %w", stream, err)
	}
	return nil
}

// dupIn returns the index of id in evs, or -1. Batches are small; a large
// one (import) is appended one event at a time.
func dupIn(evs []events.Envelope, id ulid.ULID) int {
	if len(evs) > 64 {
		return -1 // checked by the ids index when writing
	}
	for j := range evs {
		if evs[j].ID == id {
			return j
		}
	}
	return -1
}

// write appends evs; checkIDs guards against an id twice in a batch too
// large for Append's pre-check. positions, when not nil, receives the
// events' positions. Index entries wait in t.pending until commit.
func (t *Tx) write(stream string, h head, evs []events.Envelope, positions []uint64, checkIDs bool) error {
	t.wrote = true
	for i := range evs {
		e := evs[i]
		pos, err := t.events.NextSequence()
		if err != nil {
			return fmt.Errorf("append %s@%d: next sequence: %w", stream, h.version+1, err)
		}
		h.version++
		h.position = pos
		if checkIDs {
			if _, dup, err := t.lookupID(e.ID); err != nil {
				return err
			} else if dup {
				return &BatchConflictError{Stream: stream, ID: e.ID.String(), Reason: "appears twice in the batch"}
			}
		}
		if err := t.putEvent(&e, h.version, pos); err != nil {
			return err
		}
		if err := t.pending.add(stream, e.Version, e.ID, pos); err != nil {
			return err
		}
		if positions != nil {
			positions[i] = pos
		}
	}
	t.moveHead(stream, h)
	return nil
}

// putEvent puts e (a copy the caller owns) as version of its stream at
// position pos, chained to t.head, folds it and moves t.head to its hash.
// The index entries are the caller's.
func (t *Tx) putEvent(e *events.Envelope, version, pos uint64) error {
	// An imported event whose chain values stay what they were in its
	// ledger carries a hash DecodeEnvelope verified: not hashed twice,
	// and its input line, when that is its stored form, packed as it is.
	enc, carried := e.CarriedStored(version, pos, t.head)
	if !carried {
		// One that moved is sealed and encoded from its line.
		var ok bool
		if enc, t.canon, ok = e.ResealStored(version, pos, t.head, t.canon, t.enc[:0]); !ok {
			e.Version, e.Position = version, pos
			t.canon = e.SealWith(t.head, t.canon)
			enc = e.AppendEncode(t.enc[:0])
		}
		t.enc = enc[:0]
	}
	if len(enc) > events.MaxEnvelopeBytes {
		return fmt.Errorf("append %s@%d: envelope is %d bytes, limit %d", e.Stream, e.Version, len(enc), events.MaxEnvelopeBytes)
	}
	if t.packer != nil {
		// An import chunk's: packed beside the transaction, put in order
		// before the chunk ends. A carried form is the input's own line.
		if err := t.packer.add(t, pos, enc, carried); err != nil {
			return err
		}
	} else {
		binary.BigEndian.PutUint64(t.key[:], pos) // bbolt copies keys
		if err := t.events.Put(t.key[:], t.storedValue(enc)); err != nil {
			return fmt.Errorf("append %s@%d: %w", e.Stream, e.Version, err)
		}
	}
	if err := t.apply(e); err != nil {
		return fmt.Errorf("append %s@%d: %w", e.Stream, e.Version, err)
	}
	t.head = e.Hash
	return nil
}

// storedValue is the events bucket value of the stored envelope enc, in
// the tx's arena: packed in a format-3 ledger, enc itself in a format-2
// one, which only `tree-ring init` (Options.Migrate) brings to format 3,
// as the older program its hooks run reads only format 2.
func (t *Tx) storedValue(enc []byte) []byte {
	if t.pack {
		return t.arena.pack(enc)
	}
	return t.arena.copy(enc)
}

// storedRef is storedRef with the tx's buffer.
func (t *Tx) storedRef(pos uint64, v []byte) (events.Envelope, error) {
	return storedRef(t.s.path, &t.unpack, pos, v)
}

// apply folds e into every projection that handles its type. The folds
// get a copy without the hashes (fold.Projection), as in a rebuild, in
// t.folded: a copy per event would escape to the heap (the folds are
// called through an interface), and a fold keeps no envelope past Apply.
func (t *Tx) apply(e *events.Envelope) error {
	if len(t.live) == 0 {
		return nil
	}
	f := &t.folded
	*f = *e
	f.PrevHash, f.Hash = "", ""
	if t.liveKV == nil {
		t.liveKV = make([]fold.KV, len(t.live))
	}
	for i, p := range t.live {
		if !p.Handles(f.Type) {
			continue
		}
		kv := t.liveKV[i]
		if kv == nil {
			b, err := t.tx.CreateBucketIfNotExists(projBucket(p.Name()))
			if err != nil {
				return fmt.Errorf("projection %s: %w", p.Name(), err)
			}
			kv = &bucketKV{b: b, a: &t.arena}
			if bp, ok := p.(fold.Batcher); ok {
				if t.batches == nil {
					t.batches = map[string]fold.Batch{}
				}
				bt := bp.Batch(kv)
				t.batches[p.Name()], kv = bt, bt
			}
			t.liveKV[i] = kv
		}
		if err := p.Apply(kv, (*txBodies)(t), f); err != nil {
			return fmt.Errorf("projection %s: %w", p.Name(), err)
		}
	}
	return nil
}

// flushBatches writes the batched projections' writes (fold.Batcher).
func (t *Tx) flushBatches() error {
	for _, p := range t.live {
		if b := t.batches[p.Name()]; b != nil {
			if err := b.Flush(); err != nil {
				return fmt.Errorf("projection %s: %w", p.Name(), err)
			}
		}
	}
	return nil
}

// StreamVersion is the current version of stream in this transaction (0
// when it does not exist).
func (t *Tx) StreamVersion(stream string) uint64 { return t.streamHead(stream).version }

// HasID reports whether an event id is already in the ledger.
func (t *Tx) HasID(id [16]byte) bool {
	_, ok, err := t.lookupID(id)
	if err != nil {
		t.err = err // the ledger is damaged: the tx fails
	}
	return ok
}

// PutBody stores text in the content-addressed bodies bucket and returns its
// SHA-256 (lowercase hex). Storing the same text twice stores the same bytes
// under the same key again: one seek (bbolt's Put) instead of a Get first.
func (t *Tx) PutBody(text []byte) (string, error) {
	if t.err != nil {
		return "", t.err
	}
	sum := sha256.Sum256(text)
	var hx [2 * sha256.Size]byte
	hex.Encode(hx[:], sum[:])
	t.wrote = true
	v := t.arena.copy(text)
	if err := t.bodies.Put(t.arena.copy(hx[:]), v); err != nil {
		t.err = fmt.Errorf("put body %s: %w", hx[:12], err)
		return "", t.err
	}
	d := string(hx[:])
	t.last = lastBody{digest: d, text: v}
	return d, nil
}

// DeleteBody removes a body for good. The events that reference its digest
// stay, so the hash chain still verifies. After the transaction commits,
// Update overwrites every free page of the file (see scrubFreePages), so no
// byte of the text remains in the ledger.
func (t *Tx) DeleteBody(digest string) error {
	if t.err != nil {
		return t.err
	}
	if t.bodies.Get([]byte(digest)) == nil {
		return nil
	}
	t.wrote = true
	if digest == t.last.digest {
		t.last = lastBody{}
	}
	if err := t.bodies.Delete([]byte(digest)); err != nil {
		t.err = fmt.Errorf("delete body %.12s: %w", digest, err)
		return t.err
	}
	t.scrub = true
	return nil
}

// Body returns a stored body (nil when absent), valid during the tx.
func (t *Tx) Body(digest string) []byte {
	if t.last.text != nil && digest == t.last.digest {
		return t.last.text
	}
	return t.bodyReader.get(t.bodies, digest)
}

// lastBody is the body the transaction put last: the folds of the event
// that references it (the recall and duplicate indexes) read it from here
// instead of seeking the key just written.
type lastBody struct {
	digest string
	text   []byte
}

// txBodies is the folds' view of the bodies (fold.Bodies): Tx.Body.
type txBodies Tx

func (b *txBodies) Body(digest string) []byte { return (*Tx)(b).Body(digest) }

// Projection gives read access to a projection's state in this transaction,
// including events appended earlier in it. Writes return an error: only
// folds write projections.
func (t *Tx) Projection(name string) fold.KV {
	return &txProjectionKV{t: t, name: name, ro: readOnlyKV{b: t.tx.Bucket(projBucket(name))}}
}

// txProjectionKV reads a projection in a write transaction: from its
// batch once a fold has written to one (fold.Batcher), else its bucket,
// looked up again while absent (a fold may create it later in the tx).
type txProjectionKV struct {
	t    *Tx
	name string
	ro   readOnlyKV
}

func (k *txProjectionKV) kv() fold.KV {
	if b := k.t.batches[k.name]; b != nil {
		return b
	}
	if k.ro.b == nil {
		k.ro.b = k.t.tx.Bucket(projBucket(k.name))
	}
	return &k.ro
}

func (k *txProjectionKV) Get(key []byte) []byte { return k.kv().Get(key) }
func (k *txProjectionKV) Put(_, _ []byte) error { return errReadOnlyKV }
func (k *txProjectionKV) Delete(_ []byte) error { return errReadOnlyKV }
func (k *txProjectionKV) ForEach(prefix []byte, fn func(k, v []byte) error) error {
	return k.kv().ForEach(prefix, fn)
}

func checkpoint(version int, pos uint64) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, uint64(version))
	binary.BigEndian.PutUint64(b[8:], pos)
	return b
}

// bucketKV adapts a bbolt bucket to fold.KV for one transaction. Its
// values are copied into a (nil: none); its reads share one cursor (a
// bbolt Get allocates one per call).
type bucketKV struct {
	b *bbolt.Bucket
	a *valueArena
	c *bbolt.Cursor
}

func (k *bucketKV) Get(key []byte) []byte {
	if k.c == nil {
		k.c = k.b.Cursor()
	}
	return seekExact(k.c, key)
}

// Put copies value (bbolt keeps it until commit; the fold may reuse its
// buffer); bbolt copies the key itself.
func (k *bucketKV) Put(key, value []byte) error {
	return k.b.Put(key, k.a.copy(value))
}

// arenaSlab is the size of one valueArena slab.
const arenaSlab = 64 << 10

// valueArena copies the values a fold puts into shared slabs, so a fold
// that puts a value per event allocates once per slab instead of once per
// put. bbolt keeps every value until the transaction ends; the copies never
// overlap and are never written again. One arena per transaction; not for
// concurrent use.
type valueArena struct{ slab []byte }

// room makes the slab hold n more bytes (a fresh slab when it lacks them)
// and returns where they start; false, the slab unchanged, for a value
// too large to share one.
func (a *valueArena) room(n int) (start int, ok bool) {
	if n > arenaSlab/16 {
		return 0, false
	}
	if len(a.slab)+n > cap(a.slab) {
		a.slab = make([]byte, 0, arenaSlab)
	}
	return len(a.slab), true
}

// pack appends the packed form of the stored envelope enc to the arena
// and returns it (packEvent: at most one byte longer than enc).
func (a *valueArena) pack(enc []byte) []byte {
	start, ok := a.room(len(enc) + 1)
	if !ok {
		return packEvent(nil, enc)
	}
	a.slab = packEvent(a.slab, enc)
	return a.slab[start:len(a.slab):len(a.slab)]
}

func (a *valueArena) copy(v []byte) []byte {
	if a == nil || len(v) == 0 {
		return append([]byte(nil), v...)
	}
	start, ok := a.room(len(v))
	if !ok {
		return append([]byte(nil), v...)
	}
	a.slab = append(a.slab, v...)
	return a.slab[start:len(a.slab):len(a.slab)]
}
func (k *bucketKV) Delete(key []byte) error { return k.b.Delete(key) }
func (k *bucketKV) ForEach(prefix []byte, fn func(k, v []byte) error) error {
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
// (projection never written) reads as empty. Get reuses one cursor (a
// bbolt Get allocates a fresh one, and queries make hundreds of Gets), so
// like the transaction it is not for concurrent use.
type readOnlyKV struct {
	b *bbolt.Bucket
	c *bbolt.Cursor
}

func (k *readOnlyKV) Get(key []byte) []byte {
	if k.b == nil {
		return nil
	}
	if k.c == nil {
		k.c = k.b.Cursor()
	}
	return seekExact(k.c, key)
}
func (k *readOnlyKV) Put(key, value []byte) error { return errReadOnlyKV }
func (k *readOnlyKV) Delete(key []byte) error     { return errReadOnlyKV }
func (k *readOnlyKV) ForEach(prefix []byte, fn func(k, v []byte) error) error {
	if k.b == nil {
		return nil
	}
	return (&bucketKV{b: k.b}).ForEach(prefix, fn)
}

// seekExact is Bucket.Get on a reused cursor: Seek starts from the root
// every time, so it also sees what the transaction wrote since the last
// call.
func seekExact(c *bbolt.Cursor, key []byte) []byte {
	k, v := c.Seek(key)
	if !bytes.Equal(k, key) {
		return nil
	}
	return v
}

// bodyReader reads bodies by digest with one cursor and key buffer per
// transaction.
type bodyReader struct {
	c   *bbolt.Cursor
	key []byte
}

func (r *bodyReader) get(b *bbolt.Bucket, digest string) []byte {
	if b == nil {
		return nil
	}
	if r.c == nil {
		r.c = b.Cursor()
	}
	r.key = append(r.key[:0], digest...)
	return seekExact(r.c, r.key)
}

func hasPrefix(k, p []byte) bool { return len(k) >= len(p) && string(k[:len(p)]) == string(p) }
