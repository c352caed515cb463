package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

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

// CheckImport refuses, without writing, what ImportProgress would refuse up
// front (an id present with different content, in the ledger or in envs),
// then, when admit is not nil, asks it in the read transaction that
// finished the check (importPlan), with which envelopes are already
// present (same id, same content). A caller
// that records something before importing (a run) checks first, so that a
// bad file still changes nothing.
func (s *Store) CheckImport(envs []events.Envelope, admit func(r *Reader, present []bool) error) error {
	_, err := s.importPlan(envs, func(tx *bbolt.Tx, present []bool) error {
		if admit == nil {
			return nil
		}
		return admit(&Reader{s: s, tx: tx}, present)
	})
	return err
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
func (s *Store) ImportProgress(ctx context.Context, envs []events.Envelope, progress Progress) (ImportResult, error) {
	var res ImportResult
	// Refuse conflicts up front so a bad file changes nothing.
	p, err := s.importPlan(envs, nil)
	if err != nil {
		return res, err
	}
	heads := make([]importHead, len(p.streams))
	for start, gen := 0, 1; start < len(envs); gen++ {
		var c importChunkResult
		err := s.Update(ctx, func(tx *Tx) error {
			var err error
			c, err = tx.importChunk(p, heads, gen, start)
			return err
		})
		if err != nil {
			return res, err
		}
		p.seen = c.head
		res.Imported += c.imported
		res.Skipped += c.skipped
		start = c.end
		if progress != nil {
			progress(uint64(c.end), uint64(len(envs)))
		}
		if c.end < len(envs) {
			if err := s.Yield(); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// importHead is one stream of an import in the running transaction: its
// head, read from the ledger when the transaction first touches it (gen
// is that transaction's number), and its new versions' positions (carved
// from the transaction's slabs: an import of a million one-event streams
// keeps no slice per stream).
type importHead struct {
	gen  int
	head head
	run  *streamRun
}

type importChunkResult struct {
	end, imported, skipped int
	head                   uint64 // the events' sequence after the chunk
}

// importChunk appends the planned events from envs[start:] until the
// chunk (importChunk events) or the slice is over. Each stream's head is
// looked up once per transaction (heads, by the plan's stream number),
// not once per event, and its index block and head are written once, in
// key order (the plan's ranks: no sort of names per transaction).
func (t *Tx) importChunk(p *importPlanned, heads []importHead, gen, start int) (importChunkResult, error) {
	c := importChunkResult{end: start}
	// Events appended by others since our last look (another process
	// between slices, another goroutine) may be some of ours: skip
	// those, as the plan would have.
	if err := t.skipLanded(p, start); err != nil {
		return c, err
	}
	envs := p.envs
	limit := min(start+importChunk, len(envs))
	t.pending.reserve(limit - start)
	if t.pack {
		t.packer = newImportPacker(limit - start)
		defer func() { t.packer.stop(); t.packer = nil }()
	}
	var touched []int32
	i := start
	for ; i < limit; i++ {
		// A slice ends when the lock was held long enough.
		if (i-start)%64 == 63 && t.Overdue() {
			break
		}
		if p.skip[i] {
			c.skipped++
			continue
		}
		if err := t.importOne(p, heads, gen, i, &touched); err != nil {
			t.err = err
			return c, &ImportError{Index: i, Err: err}
		}
		c.imported++
	}
	if t.packer != nil {
		if err := t.packer.finish(t); err != nil {
			t.err = err
			return c, err
		}
	}
	if err := t.putImportHeads(p, heads, touched); err != nil {
		t.err = err
		return c, err
	}
	c.end, c.head = i, t.events.Sequence()
	return c, nil
}

// importOne appends envs[i] (checked by the plan: valid, absent, its
// stream's name valid) after its stream's head.
func (t *Tx) importOne(p *importPlanned, heads []importHead, gen, i int, touched *[]int32) error {
	e := p.envs[i]
	if _, ok := events.Lookup(e.Type); !ok {
		return fmt.Errorf("append %s: %w", e.Stream, &events.UnknownTypeError{Type: e.Type})
	}
	k := p.sidx[i]
	h := &heads[k]
	if h.gen != gen {
		// The stream's first event in this transaction.
		h.gen, h.head = gen, getHead(t.heads, e.Stream)
		h.run = t.pending.newRun(h.head.version)
		*touched = append(*touched, k)
	}
	pos, err := t.events.NextSequence()
	if err != nil {
		return fmt.Errorf("append %s@%d: next sequence: %w", e.Stream, h.head.version+1, err)
	}
	t.wrote, t.dirty = true, true
	h.head.version++
	h.head.position = pos
	if err := t.putEvent(&e, h.head.version, pos); err != nil {
		return err
	}
	t.pending.ids = append(t.pending.ids, idEntry{e.ID, pos})
	h.run.pos = append(h.run.pos, pos)
	return nil
}

// putImportHeads writes the index blocks and heads of the streams this
// transaction touched, in key order. (The ids wait in t.pending for the
// commit, as an append's do.)
func (t *Tx) putImportHeads(p *importPlanned, heads []importHead, touched []int32) error {
	slices.SortFunc(touched, func(a, b int32) int { return int(p.rank[a]) - int(p.rank[b]) })
	var key []byte
	for _, k := range touched {
		name, h := p.streams[k], &heads[k]
		var err error
		if key, err = putStreamRun(t.streams, &t.arena, key, name, h.run); err != nil {
			return fmt.Errorf("index: %w", t.s.indexErr(err))
		}
		if err := putHead(t.heads, name, h.head); err != nil {
			return err
		}
	}
	return nil
}

// skipLanded marks to skip the envelopes from index from on that others
// appended after position p.seen: an id there with other content is a
// conflict, found only now.
func (t *Tx) skipLanded(p *importPlanned, from int) error {
	if t.events.Sequence() == p.seen {
		return nil
	}
	c := t.events.Cursor()
	for k, v := c.Seek(u64(p.seen + 1)); k != nil; k, v = c.Next() {
		stored, err := t.storedRef(binary.BigEndian.Uint64(k), v)
		if err != nil {
			return err
		}
		i, ok := p.places.first(p.envs, stored.ID)
		if !ok || i < from || p.skip[i] {
			continue
		}
		if !events.SameContent(&stored, &p.envs[i]) {
			return &ImportError{Index: i, Err: &IDConflictError{ID: stored.ID.String(), Position: stored.Position}}
		}
		p.skip[i] = true
	}
	return nil
}

// importPlanned is an import's plan (importPlan): which envelopes to skip,
// where each id first appears, and each envelope's stream as a number.
type importPlanned struct {
	envs []events.Envelope
	skip []bool
	// places finds where an id first appears in envs.
	places idPlaces
	// seen is the head when the plan began, then after each of the
	// import's commits: skipLanded reads what others appended after it.
	seen uint64
	// streams are the distinct streams of envs, in order of first
	// appearance; envs[i].Stream is streams[sidx[i]].
	streams []string
	sidx    []int32
	byName  map[string]int32
	// rank is each stream's place in key order (set when the plan ends).
	rank []int32
}

// rankStreams sets p.rank.
func (p *importPlanned) rankStreams() {
	order := make([]int32, len(p.streams))
	for k := range order {
		order[k] = int32(k)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(p.streams[a], p.streams[b]) })
	p.rank = make([]int32, len(p.streams))
	for r, k := range order {
		p.rank[k] = int32(r)
	}
	p.byName = nil
}

// stream numbers envs[i]'s stream, checking a new one's name.
func (p *importPlanned) stream(i int) error {
	name := p.envs[i].Stream
	if i > 0 && p.envs[i-1].Stream == name {
		p.sidx[i] = p.sidx[i-1]
		return nil
	}
	k, ok := p.byName[name]
	if !ok {
		if err := events.ValidStream(name); err != nil {
			return fmt.Errorf("append %s: %w", name, err)
		}
		k = int32(len(p.streams))
		p.streams = append(p.streams, name)
		p.byName[name] = k
	}
	p.sidx[i] = k
	return nil
}

// idPlaces finds where an id first appears among the envelopes recorded
// so far (add, in order). While their ids strictly increase, as in one
// ledger's export (time-ordered ULIDs), that is a binary search and no id
// can repeat; the map of every id is built only once one does not.
type idPlaces struct {
	n int              // envs[:n] are recorded
	m map[[16]byte]int // nil while envs[:n]'s ids strictly increase
}

// add records envs[i] (i == p.n) and returns where its id appeared
// before, if it did.
func (p *idPlaces) add(envs []events.Envelope, i int) (int, bool) {
	p.n = i + 1
	id := envs[i].ID
	if p.m == nil {
		if i == 0 || bytes.Compare(envs[i-1].ID[:], id[:]) < 0 {
			return 0, false
		}
		p.m = make(map[[16]byte]int, len(envs))
		for j := range envs[:i] {
			p.m[envs[j].ID] = j // distinct: they increase
		}
	}
	if j, dup := p.m[id]; dup {
		return j, true
	}
	p.m[id] = i
	return 0, false
}

// first returns where id first appears among the recorded envelopes.
func (p *idPlaces) first(envs []events.Envelope, id [16]byte) (int, bool) {
	if p.m != nil {
		j, ok := p.m[id]
		return j, ok
	}
	j, ok := slices.BinarySearchFunc(envs[:p.n], id, func(e events.Envelope, id [16]byte) int {
		return bytes.Compare(e.ID[:], id[:])
	})
	return j, ok
}

// importPlan checks every envelope against the ledger and the ones before
// it, and marks those to skip (already present with the same content).
// It reads in transactions that end with the slice (Store.Yield between
// them: a plan of a million ids takes seconds); last, when not nil, runs
// in the one that finishes it. An event others append between two of
// them is found by the later ones or, for ids already checked, by the
// import's skipLanded, which reads from the plan's head on.
func (s *Store) importPlan(envs []events.Envelope, last func(tx *bbolt.Tx, skip []bool) error) (*importPlanned, error) {
	p := &importPlanned{envs: envs, skip: make([]bool, len(envs)), sidx: make([]int32, len(envs)), byName: map[string]int32{}}
	for from, first := 0, true; ; first = false {
		err := s.view(func(tx *bbolt.Tx) error {
			if first {
				p.seen = tx.Bucket(bucketEvents).Sequence()
			}
			var err error
			if from, err = s.planFrom(tx, p, from); err != nil || from < len(envs) || last == nil {
				return err
			}
			return last(tx, p.skip)
		})
		if err != nil {
			return nil, err
		}
		if from == len(envs) {
			p.rankStreams()
			return p, nil
		}
		if err := s.Yield(); err != nil {
			return nil, err
		}
	}
}

// planFrom plans envs[from:] in tx until the slice is over; it returns
// where it stopped.
func (s *Store) planFrom(tx *bbolt.Tx, p *importPlanned, from int) (int, error) {
	ids := idIndex{b: tx.Bucket(bucketIDBlocks)}
	evb := tx.Bucket(bucketEvents)
	var buf eventBuf
	envs := p.envs
	for i := from; i < len(envs); i++ {
		if (i-from)%1024 == 1023 && s.overdue() {
			return i, nil
		}
		e := &envs[i]
		if err := p.stream(i); err != nil {
			return 0, &ImportError{Index: i, Err: err}
		}
		if j, dup := p.places.add(envs, i); dup {
			if !events.SameContent(&envs[j], e) {
				return 0, &ImportError{Index: i, Err: &InputConflictError{ID: e.ID.String(), First: j}}
			}
			p.skip[i] = true
			continue
		}
		pos, ok, err := ids.get(e.ID[:])
		if err != nil {
			return 0, s.indexErr(err)
		}
		if !ok {
			continue
		}
		stored, err := storedRef(s.path, &buf, pos, evb.Get(u64(pos)))
		if err != nil {
			return 0, err
		}
		if !events.SameContent(&stored, e) {
			return 0, &ImportError{Index: i, Err: &IDConflictError{ID: e.ID.String(), Position: stored.Position}}
		}
		p.skip[i] = true
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
