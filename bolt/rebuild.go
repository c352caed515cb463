package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/fold"
	bbolt "go.etcd.io/bbolt"
)

// foldChunk is how many events one rebuild transaction folds: large enough
// to amortize the commit (each rewrites every leaf its keys landed in: at
// 20,000 a rebuild of 100k memories writes half the bytes it wrote at
// 5,000, for 1-7 % less CPU), small enough to bound memory (a batching fold
// holds its chunk's writes: +30-60 MB there) and to stop promptly on
// cancellation. A crash between chunks leaves a consistent checkpoint.
// bbolt splits nodes only at commit, so a transaction that inserts many
// keys at random places into a fresh bucket is quadratic: before the
// recall index batched (fold.Batcher: its keys now land in order), it took
// 39 s to rebuild 30,000 memories at 50,000 events per chunk and 3 s at
// 5,000.
const foldChunk = 20_000

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
			last, err := s.foldTx(tx, projs, unbounded, head, next, limit, shadow)
			if err != nil {
				return err
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

// foldTx is one transaction of fold: the events from next on, at most
// limit, folded into projs (foldChunk), and each projection's checkpoint
// moved to the last of them.
func (s *Store) foldTx(tx *bbolt.Tx, projs []fold.Projection, to []uint64, head, next uint64, limit int, shadow bool) (last uint64, err error) {
	var mu *sync.Mutex // nil: every projection folds on this goroutine
	if concurrentFold(projs) {
		mu = new(sync.Mutex)
	}
	parent, cps, kvs, err := foldState(tx, projs, shadow, mu)
	if err != nil {
		return 0, err
	}
	last, n, err := s.foldChunk(mu, tx, projs, kvs, cps, to, next, limit, shadow)
	if err != nil {
		return 0, err
	}
	if n == 0 && last < head {
		return 0, &CorruptError{Path: s.path, Err: fmt.Errorf("sequence is %d but no event follows position %d", head, last)}
	}
	for i, p := range projs {
		if last <= cps[i] {
			continue
		}
		if shadow {
			err = parent.Put(rebuildCPKey(p), checkpoint(p.Version(), last))
		} else {
			err = tx.Bucket(bucketProjCP).Put([]byte(p.Name()), checkpoint(p.Version(), last))
		}
		if err != nil {
			return 0, err
		}
	}
	return last, nil
}

// concurrentFold reports whether foldChunk folds some of projs on
// goroutines of their own: those that batch, beside at least one other.
func concurrentFold(projs []fold.Projection) bool {
	for _, p := range projs {
		if _, ok := p.(fold.Batcher); ok {
			return len(projs) > 1
		}
	}
	return false
}

// foldState opens the buckets fold writes and the checkpoint of each
// projection: the rebuild's shadow (parent is bucketRebuild) or the live
// ones (parent nil).
//
// Every bbolt call of the KVs holds mu, unless it is nil: the projections
// fold on goroutines of their own (foldChunk).
func foldState(tx *bbolt.Tx, projs []fold.Projection, shadow bool, mu *sync.Mutex) (parent *bbolt.Bucket, cps []uint64, kvs []fold.KV, err error) {
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
		if mu != nil {
			kvs[i] = &sharedKV{mu: mu, kv: kvs[i].(*bucketKV)}
		}
		if bp, ok := p.(fold.Batcher); ok {
			kvs[i] = bp.Batch(kvs[i]) // flushed at the end of the chunk
		}
	}
	return parent, cps, kvs, nil
}

// foldChunk folds the events from position next on, at most limit (fewer
// when a shadow's slice is overdue), in the transaction tx, and flushes the
// projections' batches; it returns the last position folded and how many
// events it read. The events are read and decoded on this goroutine, once
// for every projection. With mu set, each projection that batches its
// writes (fold.Batcher: a fold that writes many keys per event, as the
// recall and duplicate indexes do) folds them in order on a goroutine of
// its own, beside the decoding and the other folds: the machine has two
// cores. The others fold here, where handing a cheap fold's events to
// another goroutine would cost more than the fold. The projections share
// only the transaction, whose every call then holds mu (their KVs:
// sharedKV), so bbolt sees one caller at a time; what a projection reads
// depends only on its own bucket and the events, so the result is the
// sequential fold's. Every goroutine has ended when foldChunk returns.
func (s *Store) foldChunk(mu *sync.Mutex, tx *bbolt.Tx, projs []fold.Projection, kvs []fold.KV, from, to []uint64, next uint64, limit int, shadow bool) (last uint64, n int, err error) {
	cf := startChunk(projs, kvs, from, to, &foldBodies{mu: mu, b: tx.Bucket(bucketBodies)}, mu != nil)
	cf.path = s.path
	defer func() {
		if ferr := cf.finish(); err == nil {
			err = ferr
		}
	}()
	last = next - 1
	c := tx.Bucket(bucketEvents).Cursor()
	step := func(first bool) (k, v []byte) {
		if mu != nil {
			mu.Lock()
			defer mu.Unlock()
		}
		if first {
			return c.Seek(u64(next))
		}
		return c.Next()
	}
	var strs events.StringCache
	var e events.Envelope // scratch, as in foldOne: the batches hold copies
	var slab eventSlab    // their payloads: an unpacked value outlives its step
	want := make([]bool, len(projs))
	for k, v := step(true); k != nil && n < limit && !cf.failed.Load(); k, v = step(false) {
		if shadow && n%64 == 63 && s.overdue() {
			break
		}
		pos := binary.BigEndian.Uint64(k)
		raw, err := slab.bytes(v)
		if err != nil {
			cf.fail(len(projs), pos, fmt.Errorf("position %d: %w", pos, err))
			break
		}
		ok, err := decodeFor(projs, from, to, pos, raw, &e, &strs, want)
		if err != nil {
			cf.fail(len(projs), pos, err)
			break
		}
		if ok && !cf.feed(pos, &e, want) {
			break
		}
		last = pos
		n++
	}
	return last, n, nil
}

// foldEvent is one decoded event of a chunk, read by the projections'
// goroutines and written by none.
type foldEvent struct {
	pos uint64
	e   events.Envelope
	// The body a memory's capture references, read by the decoding: the
	// recall and duplicate indexes each read it, on the goroutines that
	// bound the fold, and the decoding has time to spare.
	digest string
	body   []byte
}

// eventBodies serves a projection's goroutine the body its event's
// decoding read (foldEvent), and any other from the bucket.
type eventBodies struct {
	digest string
	body   []byte
	all    fold.Bodies
}

func (b *eventBodies) Body(d string) []byte {
	if b.body != nil && d == b.digest {
		return b.body
	}
	return b.all.Body(d)
}

// foldBatchLen is how many decoded events the projections' goroutines
// receive at a time, and foldAhead how many such batches the decoding may
// be ahead of the slowest: the lag (and the memory it holds) is bounded.
// The lag is also how far past an overdue slice's end the folds go: 384
// events are about 12 ms of the recall index's fold.
const (
	foldBatchLen = 128
	foldAhead    = 2
)

// chunk is one foldChunk's projections at work.
type chunk struct {
	projs    []fold.Projection
	kvs      []fold.KV
	bod      fold.Bodies
	from, to []uint64
	ins      []chan []foldEvent // nil for a projection folded inline
	batch    []foldEvent
	want     []bool // the goroutines that fold an event of batch
	wg       sync.WaitGroup
	failed   atomic.Bool
	mu       sync.Mutex // guards errs
	errs     []chunkErr
	finished bool
	path     string // the ledger's, for a CorruptError
}

// chunkErr is a failure at an event position (^0: a flush), by projection
// index (len(projs): the decoding of the event, whose folds it prevents).
type chunkErr struct {
	proj int
	pos  uint64
	err  error
}

// startChunk starts a goroutine for each projection that batches, when
// concurrent.
func startChunk(projs []fold.Projection, kvs []fold.KV, from, to []uint64, bod fold.Bodies, concurrent bool) *chunk {
	c := &chunk{projs: projs, kvs: kvs, bod: bod, from: from, to: to, ins: make([]chan []foldEvent, len(projs)), want: make([]bool, len(projs))}
	for i := range projs {
		if _, ok := kvs[i].(fold.Batch); !ok || !concurrent {
			continue
		}
		c.ins[i] = make(chan []foldEvent, foldAhead)
		c.wg.Add(1)
		go c.run(i)
	}
	return c
}

// run folds into projection i every event it receives that it handles,
// past its checkpoint, then flushes its batch. After a failure it only
// drains its input, so the decoding never blocks on it.
func (c *chunk) run(i int) {
	defer c.wg.Done()
	p := c.projs[i]
	bod := &eventBodies{all: c.bod}
	for b := range c.ins[i] {
		for j := range b {
			ev := &b[j]
			if ev.pos <= c.from[i] || ev.pos > c.to[i] || !p.Handles(ev.e.Type) {
				continue
			}
			bod.digest, bod.body = ev.digest, ev.body
			if err := p.Apply(c.kvs[i], bod, &ev.e); err != nil {
				c.fail(i, ev.pos, fmt.Errorf("position %d: projection %s: %w", ev.pos, p.Name(), err))
				for range c.ins[i] {
				}
				return
			}
		}
	}
	c.flush(i)
}

func (c *chunk) flush(i int) {
	if b, ok := c.kvs[i].(fold.Batch); ok {
		if err := b.Flush(); err != nil {
			c.fail(i, ^uint64(0), err)
		}
	}
}

func (c *chunk) fail(proj int, pos uint64, err error) {
	c.mu.Lock()
	c.errs = append(c.errs, chunkErr{proj, pos, err})
	c.mu.Unlock()
	c.failed.Store(true)
}

// first is the failure at the lowest position, of the first projection
// there; nil if none.
func (c *chunk) first() *chunkErr {
	var first *chunkErr
	for i := range c.errs {
		e := &c.errs[i]
		if first == nil || e.pos < first.pos || e.pos == first.pos && e.proj < first.proj {
			first = e
		}
	}
	return first
}

// feed folds e into the projections want marks, those folded inline now
// and the others through the batch, and clears want. false: an inline
// fold failed.
func (c *chunk) feed(pos uint64, e *events.Envelope, want []bool) bool {
	queued := false
	for i, w := range want {
		switch {
		case !w:
			continue
		case c.ins[i] != nil:
			c.want[i], queued = true, true
		default:
			if err := c.projs[i].Apply(c.kvs[i], c.bod, e); err != nil {
				c.fail(i, pos, fmt.Errorf("position %d: projection %s: %w", pos, c.projs[i].Name(), err))
				return false
			}
		}
	}
	clear(want)
	if !queued {
		return true
	}
	if c.batch == nil {
		c.batch = make([]foldEvent, 0, foldBatchLen)
	}
	ev := foldEvent{pos: pos, e: *e}
	if v, ok := events.VerifiedPayload(e); ok {
		if m, ok := v.(*events.MemoryCaptured); ok {
			ev.digest, ev.body = m.BodySHA256, c.bod.Body(m.BodySHA256)
		}
	}
	c.batch = append(c.batch, ev)
	if len(c.batch) == foldBatchLen {
		c.send()
	}
	return true
}

func (c *chunk) send() {
	if len(c.batch) == 0 {
		return
	}
	for i, in := range c.ins {
		if c.want[i] { // the others are not woken for nothing
			in <- c.batch
		}
	}
	clear(c.want)
	c.batch = nil // shared now: the next batch is a new one
}

// finish hands over the last batch, waits for every goroutine to fold and
// flush, flushes the inline batches, and returns the failure the
// sequential fold would have met first: at the lowest position, of the
// first projection there. A decoding or fold failure is the ledger's (a
// CorruptError), a flush's is returned as it is.
func (c *chunk) finish() error {
	if c.finished {
		return nil
	}
	c.finished = true
	// Even after a failure: its events come before the failure's, and a
	// projection's goroutine may fail earlier still.
	c.send()
	for _, in := range c.ins {
		if in != nil {
			close(in)
		}
	}
	c.wg.Wait()
	for i, in := range c.ins {
		if in == nil && !c.failed.Load() {
			c.flush(i)
		}
	}
	first := c.first()
	switch {
	case first == nil:
		return nil
	case first.pos == ^uint64(0):
		return first.err
	}
	return &CorruptError{Path: c.path, Err: first.err}
}

// foldOne applies the stored event raw at pos to every projection i with
// from[i] < pos <= to[i] that handles its type (decodeFor). verify folds
// with it, one event at a time.
//
// e is scratch space reused across calls (one allocation per fold, not per
// event): a projection must not keep the envelope past Apply, which the
// Payload aliasing the transaction's memory forbids anyway. strs shares
// the envelopes' strings across the fold (events.DecodeStoredFold).
func foldOne(projs []fold.Projection, kvs []fold.KV, from, to []uint64, bod fold.Bodies, pos uint64, raw []byte, e *events.Envelope, strs *events.StringCache) error {
	if ok, err := decodeFor(projs, from, to, pos, raw, e, strs, nil); err != nil || !ok {
		return err
	}
	for i, p := range projs {
		if pos <= from[i] || pos > to[i] || !p.Handles(e.Type) {
			continue
		}
		if err := p.Apply(kvs[i], bod, e); err != nil {
			return fmt.Errorf("position %d: projection %s: %w", pos, p.Name(), err)
		}
	}
	return nil
}

// decodeFor decodes the stored event raw at pos into e if a projection i
// with from[i] < pos <= to[i] handles its type (ok false: none does,
// nothing decoded), and its payload too when more than one does
// (events.DecodeFoldPayload): the recall and duplicate indexes share one
// decode of a memory's payload. It sets want[i] for each such projection
// (want may be nil).
func decodeFor(projs []fold.Projection, from, to []uint64, pos uint64, raw []byte, e *events.Envelope, strs *events.StringCache, want []bool) (ok bool, err error) {
	tb, ok := events.PeekTypeBytes(raw)
	if !ok {
		return false, fmt.Errorf("position %d: malformed envelope", pos)
	}
	typ, ok := events.TypeName(tb)
	if !ok {
		return false, fmt.Errorf("position %d: %w", pos, &events.UnknownTypeError{Type: string(tb)})
	}
	n := 0
	for i, p := range projs {
		if pos > from[i] && pos <= to[i] && p.Handles(typ) {
			n++
			if want != nil {
				want[i] = true
			}
		}
	}
	if n == 0 {
		return false, nil
	}
	if *e, err = events.DecodeStoredFold(raw, typ, strs); err != nil {
		return false, fmt.Errorf("position %d: %w", pos, err)
	}
	if n > 1 {
		if err := events.DecodeFoldPayload(e); err != nil {
			return false, fmt.Errorf("position %d: %w", pos, err)
		}
	}
	return true, nil
}

// sharedKV is a bucketKV whose every bbolt call holds mu, the lock of the
// transaction's callers (foldChunk). A value it returns stays valid while
// its own projection does not write, as bbolt's do: the other goroutines
// write other buckets.
type sharedKV struct {
	mu *sync.Mutex
	kv *bucketKV
}

func (k *sharedKV) Get(key []byte) []byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.kv.Get(key)
}

func (k *sharedKV) Put(key, value []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.kv.Put(key, value)
}

func (k *sharedKV) Delete(key []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.kv.Delete(key)
}

// ForEach holds mu for each cursor step, not while fn runs (fn may Get).
func (k *sharedKV) ForEach(prefix []byte, fn func(k, v []byte) error) error {
	k.mu.Lock()
	c := k.kv.b.Cursor()
	key, v := c.Seek(prefix)
	k.mu.Unlock()
	for key != nil && hasPrefix(key, prefix) {
		if err := fn(key, v); err != nil {
			return err
		}
		k.mu.Lock()
		key, v = c.Next()
		k.mu.Unlock()
	}
	return nil
}

// foldBodies is the bodies bucket for a fold, read with one cursor and key
// buffer (bodyReader: a bbolt Get allocates a cursor per call), holding mu
// (unless nil) as sharedKV does.
type foldBodies struct {
	mu *sync.Mutex
	b  *bbolt.Bucket
	r  bodyReader
}

func (b *foldBodies) Body(d string) []byte {
	if b.mu != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	return b.r.get(b.b, d)
}
