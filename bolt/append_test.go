package bolt

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/fold"
	"github.com/tree-ring/tree-ring/events/memory"
)

func TestAppendReadRoundTrip(t *testing.T) {
	f := newFactory()
	st, _ := openTest(t, Options{Projections: []fold.Projection{testProjection()}})
	a1, a2 := f.run("a", 1), f.run("a", 2)
	b1 := f.trust("claude-code")
	if got := mustAppend(t, st, "run/a", 0, a1, a2); !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("positions %v", got)
	}
	if got := mustAppend(t, st, "harness/claude-code", 0, b1); !slices.Equal(got, []uint64{3}) {
		t.Fatalf("positions %v", got)
	}
	all := readAll(t, st)
	if len(all) != 3 {
		t.Fatalf("read %d events", len(all))
	}
	for i, want := range []events.Envelope{a1, a2, b1} {
		got := all[i]
		if !events.SameContent(&got, &want) || got.Position != uint64(i+1) {
			t.Errorf("event %d: got %+v, want %+v", i, got, want)
		}
		if got.ComputeHash() != got.Hash {
			t.Errorf("event %d: bad hash", i)
		}
	}
	if all[0].PrevHash != events.GenesisHash || all[1].PrevHash != all[0].Hash || all[2].PrevHash != all[1].Hash {
		t.Error("events do not chain")
	}
	if all[0].Version != 1 || all[1].Version != 2 || all[2].Version != 1 {
		t.Errorf("versions %d %d %d", all[0].Version, all[1].Version, all[2].Version)
	}
	var stream []uint64
	if err := st.ReadStream(bg, "run/a", 1, func(e *events.Envelope) error { stream = append(stream, e.Version); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stream, []uint64{2}) {
		t.Errorf("ReadStream after 1: versions %v", stream)
	}
	pos, hash, err := st.Head()
	if err != nil || pos != 3 || hash != all[2].Hash {
		t.Errorf("Head = %d %s %v", pos, hash, err)
	}
	err = st.View(func(r *Reader) error {
		e, ok, err := r.Event(2)
		if err != nil || !ok || e.ID != a2.ID {
			t.Errorf("Event(2) = %v %v %v", e.ID, ok, err)
		}
		if _, ok, _ := r.Event(4); ok {
			t.Error("Event(4) exists")
		}
		if v := r.StreamVersion("run/a"); v != 2 {
			t.Errorf("StreamVersion = %d", v)
		}
		if v := r.Projection("test_counts").Get([]byte("type/run.started")); len(v) != 8 || v[7] != 2 {
			t.Errorf("projection count = %v", v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var raw []string
	if err := st.ScanRaw(bg, 1, func(pos uint64, b []byte) error { raw = append(raw, string(b)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(raw) != 2 || raw[0] != string(all[1].Encode()) {
		t.Errorf("ScanRaw after 1: %q", raw)
	}
}

// TestReadResultsOutliveTheTransaction keeps envelopes from ReadAll and
// checks their payloads after many more writes (and mmap remaps).
func TestReadResultsOutliveTheTransaction(t *testing.T) {
	f := newFactory()
	st, _ := openTest(t, Options{})
	st.db.NoSync = true // durability is not under test; keep it fast
	mustAppend(t, st, "run/a", 0, f.run("a", 1))
	kept := readAll(t, st)
	want := string(kept[0].Payload)
	for i := range 50 {
		evs := make([]events.Envelope, 100)
		for j := range evs {
			evs[j] = f.run("b", i*100+j)
		}
		mustAppend(t, st, "run/b", AnyVersion, evs...)
	}
	if string(kept[0].Payload) != want {
		t.Fatal("a payload read earlier changed")
	}
}

func TestExpectedVersion(t *testing.T) {
	f := newFactory()
	st, _ := openTest(t, Options{})
	mustAppend(t, st, "run/a", 0, f.run("a", 1))
	before := txID(t, st)
	_, err := st.Append(bg, "run/a", 0, f.run("a", 2))
	var wev *WrongExpectedVersionError
	if !errors.As(err, &wev) || wev.Stream != "run/a" || wev.Expected != 0 || wev.Actual != 1 {
		t.Fatalf("got %v, want WrongExpectedVersionError{run/a, 0, 1}", err)
	}
	if _, err := st.Append(bg, "run/a", 5, f.run("a", 2)); !errors.As(err, &wev) || wev.Actual != 1 {
		t.Fatalf("expected 5: %v", err)
	}
	if _, err := st.Append(bg, "run/a", -2, f.run("a", 2)); err == nil {
		t.Fatal("accepted expected version -2")
	}
	if txID(t, st) != before {
		t.Fatal("a refused append committed")
	}
	if pos, _, _ := st.Head(); pos != 1 {
		t.Fatalf("head %d after refused appends", pos)
	}
	mustAppend(t, st, "run/a", 1, f.run("a", 2))
	mustAppend(t, st, "run/a", AnyVersion, f.run("a", 3))
	mustAppend(t, st, "run/b", 0, f.run("b", 1))
	if _, err := st.Append(bg, "run/b", 0, f.run("b", 2)); !errors.As(err, &wev) {
		t.Fatalf("second create of run/b: %v", err)
	}
}

func TestIdempotentRetry(t *testing.T) {
	f := newFactory()
	st, _ := openTest(t, Options{Projections: []fold.Projection{testProjection()}})
	mustAppend(t, st, "run/x", 0, f.run("x", 0))
	batch := []events.Envelope{f.run("a", 1), f.run("a", 2), f.run("a", 3)}
	first := mustAppend(t, st, "run/a", 0, batch...)
	mustAppend(t, st, "run/a", 3, f.run("a", 4)) // the stream moved on
	before, beforeTx := readAll(t, st), txID(t, st)

	// The retry carries the stale expected version: it must still return
	// the original positions and append nothing (not even commit).
	again, err := st.Append(bg, "run/a", 0, batch...)
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if !slices.Equal(again, first) || !slices.Equal(first, []uint64{2, 3, 4}) {
		t.Fatalf("retry positions %v, first %v", again, first)
	}
	if txID(t, st) != beforeTx {
		t.Fatal("an idempotent retry committed a transaction")
	}
	if after := readAll(t, st); len(after) != len(before) {
		t.Fatalf("retry appended: %d -> %d events", len(before), len(after))
	}

	// Same id, other content.
	changed := batch[1]
	changed.Payload = json.RawMessage(strings.Replace(string(changed.Payload), `"stage":"stage-2"`, `"stage":"stage-9"`, 1))
	_, err = st.Append(bg, "run/a", AnyVersion, changed)
	var idc *IDConflictError
	if !errors.As(err, &idc) || idc.Position != 3 || idc.ID != changed.ID.String() {
		t.Fatalf("changed content: %v", err)
	}
	// Part of the batch is new.
	_, err = st.Append(bg, "run/a", AnyVersion, batch[0], f.run("a", 5))
	var bc *BatchConflictError
	if !errors.As(err, &bc) || !strings.Contains(err.Error(), "already at position 2") {
		t.Fatalf("partial batch: %v", err)
	}
	// One id twice in a batch.
	dup := f.run("a", 6)
	if _, err = st.Append(bg, "run/a", AnyVersion, dup, dup); !errors.As(err, &bc) {
		t.Fatalf("duplicate in batch: %v", err)
	}
	if txID(t, st) != beforeTx {
		t.Fatal("a refused append committed")
	}
	if !IsConflict(err) {
		t.Fatal("IsConflict(batch conflict) = false")
	}
}

// TestAppendValidates refuses events that verify would reject later.
func TestAppendValidates(t *testing.T) {
	f := newFactory()
	st, _ := openTest(t, Options{})
	good := f.run("a", 1)
	bad := map[string]func(e *events.Envelope){
		"unknown type":      func(e *events.Envelope) { e.Type = "run.exploded" },
		"unknown key":       func(e *events.Envelope) { e.Payload = json.RawMessage(`{"run_id":"a","prompt":"secret"}`) },
		"not compact":       func(e *events.Envelope) { e.Payload = json.RawMessage(`{"run_id": "a"}`) },
		"wrong stream kind": func(e *events.Envelope) { e.Stream = "memory/a" },
		"quote in actor":    func(e *events.Envelope) { e.Actor = `"` },
	}
	for name, mut := range bad {
		e := good
		mut(&e)
		if _, err := st.Append(bg, e.Stream, AnyVersion, e); err == nil {
			t.Errorf("%s: appended", name)
		}
	}
	if _, err := st.Append(bg, "run/b", AnyVersion, good); err == nil {
		t.Error("appended an event to another stream than its own")
	}
	if _, err := st.Append(bg, "bad stream", AnyVersion); err != nil {
		t.Errorf("empty append: %v", err)
	}
	if pos, _, _ := st.Head(); pos != 0 {
		t.Fatalf("head %d", pos)
	}
}

// TestUpdateAtomicAndPoisoned: a failure after an append started writing
// fails the whole Update even when the callback swallows it; a failure
// before writing (a conflict) leaves the transaction usable.
func TestUpdateAtomicAndPoisoned(t *testing.T) {
	f := newFactory()
	proj := testProjection()
	proj.failOn = "poison"
	st, _ := openTest(t, Options{Projections: []fold.Projection{testProjection()}})
	st.projs = []fold.Projection{proj} // same name, fails on one actor
	mustAppend(t, st, "run/a", 0, f.run("a", 1))
	before := readAll(t, st)

	poison := f.run("a", 2)
	poison.Actor = "poison"
	err := st.Update(bg, func(tx *Tx) error {
		if _, err := tx.Append("run/a", 1, f.run("a", 3)); err != nil {
			return err
		}
		_, _ = tx.Append("run/a", AnyVersion, poison) // swallowed
		_, _ = tx.PutBody([]byte("text"))
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "refused by test projection") {
		t.Fatalf("Update after a swallowed write failure: %v", err)
	}
	if after := readAll(t, st); len(after) != len(before) {
		t.Fatalf("a poisoned Update committed %d events", len(after)-len(before))
	}

	err = st.Update(bg, func(tx *Tx) error {
		var wev *WrongExpectedVersionError
		if _, err := tx.Append("run/a", 0, f.run("a", 4)); !errors.As(err, &wev) {
			return fmt.Errorf("want a version conflict, got %v", err)
		}
		_, err := tx.Append("run/a", 1, f.run("a", 5))
		return err
	})
	if err != nil {
		t.Fatalf("Update after a handled conflict: %v", err)
	}
	if after := readAll(t, st); len(after) != len(before)+1 {
		t.Fatalf("%d events, want %d", len(after), len(before)+1)
	}

	// An error returned by the callback rolls back everything it did.
	err = st.Update(bg, func(tx *Tx) error {
		if _, err := tx.Append("run/a", AnyVersion, f.run("a", 6)); err != nil {
			return err
		}
		if _, err := tx.PutBody([]byte("body")); err != nil {
			return err
		}
		return errors.New("changed my mind")
	})
	if err == nil || len(readAll(t, st)) != len(before)+1 {
		t.Fatalf("rolled back Update: %v", err)
	}
	_ = st.View(func(r *Reader) error {
		if r.Body("230d8358dc8e8890b4c58deeb62912ee2f20357ae92a5cc861b98e68fe31acb5") != nil {
			t.Error("body of a rolled back Update is stored")
		}
		return nil
	})
}

func TestUpdateWithoutWritesDoesNotCommit(t *testing.T) {
	st, _ := openTest(t, Options{})
	before := txID(t, st)
	if err := st.Update(bg, func(tx *Tx) error { _ = tx.StreamVersion("run/a"); return nil }); err != nil {
		t.Fatal(err)
	}
	if txID(t, st) != before {
		t.Fatal("an Update that wrote nothing committed")
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := st.Update(ctx, func(tx *Tx) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Update: %v", err)
	}
}

func TestBodies(t *testing.T) {
	st, _ := openTest(t, Options{})
	var d string
	err := st.Update(bg, func(tx *Tx) error {
		var err error
		if d, err = tx.PutBody([]byte("remember this")); err != nil {
			return err
		}
		if d2, _ := tx.PutBody([]byte("remember this")); d2 != d {
			t.Errorf("digest differs: %s %s", d, d2)
		}
		if string(tx.Body(d)) != "remember this" {
			t.Error("body not visible in its tx")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = st.View(func(r *Reader) error {
		if string(r.Body(d)) != "remember this" {
			t.Error("body not stored")
		}
		return nil
	})
	if err := st.Update(bg, func(tx *Tx) error { return tx.DeleteBody(d) }); err != nil {
		t.Fatal(err)
	}
	_ = st.View(func(r *Reader) error {
		if r.Body(d) != nil {
			t.Error("body not deleted")
		}
		return nil
	})
}

// A transaction's read KV and Body reuse one cursor each; they must still
// see what the same transaction writes after they were first used.
func TestReadsInATxSeeItsOwnWrites(t *testing.T) {
	f := newFactory()
	st, _ := openTest(t, Options{Projections: []fold.Projection{testProjection()}})
	key := []byte("type/run.started")
	mustAppend(t, st, "run/000", 0, f.run("000", 1)) // the projection's bucket exists from its first fold
	err := st.Update(bg, func(tx *Tx) error {
		kv := tx.Projection("test_counts")
		if v := kv.Get(key); len(v) != 8 || binary.BigEndian.Uint64(v) != 1 || tx.Body(strings.Repeat("0", 64)) != nil {
			t.Errorf("first reads: %x", v)
		}
		for i := uint64(2); i <= 300; i++ { // enough keys to split a page
			stream := fmt.Sprintf("run/%03d", i)
			if _, err := tx.Append(stream, 0, f.run(stream[4:], 1)); err != nil {
				return err
			}
			if v := kv.Get(key); len(v) != 8 || binary.BigEndian.Uint64(v) != i {
				t.Fatalf("after %d appends the reused KV reads %x", i, v)
			}
		}
		d, err := tx.PutBody([]byte("text"))
		if err != nil {
			return err
		}
		if string(tx.Body(d)) != "text" {
			t.Error("body put in the tx not read")
		}
		if err := tx.DeleteBody(d); err != nil {
			return err
		}
		if tx.Body(d) != nil {
			t.Error("body deleted in the tx still read")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentAppendsGapless: 1,000 appends from 8 goroutines in one
// process get positions 1..1000, each exactly once, and verify passes.
func TestConcurrentAppendsGapless(t *testing.T) {
	f := newFactory()
	st, _ := openTest(t, Options{Projections: []fold.Projection{testProjection()}})
	// Durability is not under test here (see the crash test), and 1,000
	// fsynced commits would take seconds: the ordering logic is the same.
	st.db.NoSync = true
	const workers, each = 8, 125
	got := make([][]uint64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// Half the workers share one stream (AnyVersion), half use
				// their own with exact expected versions.
				stream, name, exp := "run/shared", "shared", AnyVersion
				if w%2 == 1 {
					name = fmt.Sprintf("w%d", w)
					stream, exp = "run/"+name, int64(i)
				}
				pos, err := st.Append(bg, stream, exp, f.run(name, i))
				if err != nil {
					t.Error(err)
					return
				}
				got[w] = append(got[w], pos...)
			}
		}()
	}
	wg.Wait()
	var all []uint64
	for w := range workers {
		if !slices.IsSorted(got[w]) {
			t.Errorf("worker %d saw positions out of order", w)
		}
		all = append(all, got[w]...)
	}
	slices.Sort(all)
	for i, p := range all {
		if p != uint64(i+1) {
			t.Fatalf("positions are not 1..%d: at %d got %d", workers*each, i, p)
		}
	}
	if len(all) != workers*each {
		t.Fatalf("%d positions", len(all))
	}
	rep, err := st.Verify(bg)
	if err != nil || rep.Events != workers*each || rep.Streams != 1+workers/2 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	t.Logf("appends: %d goroutines x %d appends, positions 1..%d each exactly once, verify passed", workers, each, len(all))
}

// bodyFold reads the body of every memory.captured it folds, counting the
// bbolt cursors (seeks) the read opened.
type bodyFold struct {
	cursors func() int64
	read    []string
	opened  int64
}

func (p *bodyFold) Name() string          { return "test_bodies" }
func (p *bodyFold) Version() int          { return 1 }
func (p *bodyFold) Handles(t string) bool { return t == events.TypeMemoryCaptured }
func (p *bodyFold) Apply(_ fold.KV, b fold.Bodies, e *events.Envelope) error {
	c, err := events.Payload[events.MemoryCaptured](e)
	if err != nil {
		return err
	}
	before := p.cursors()
	p.read = append(p.read, string(b.Body(c.BodySHA256)))
	p.opened += p.cursors() - before
	return nil
}

// The folds of a memory read the body the transaction has just put without
// a seek; an older body, and one deleted in the tx, still read as stored.
func TestFoldsReadTheBodyJustPutWithoutASeek(t *testing.T) {
	p := &bodyFold{}
	st, _ := openTest(t, Options{Projections: []fold.Projection{p}})
	ef := newFactory().events()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var put []string
	capture := func(tx *Tx, n int, body string) (string, error) {
		id := fmt.Sprintf("mem_body_%03d", n)
		r := memory.NewRecord(id, body, "lesson", base)
		c, text := r.Split(events.OriginImport, fmt.Sprintf("%032x", n))
		put = append(put, string(text))
		d, err := tx.PutBody(text)
		if err != nil {
			return "", err
		}
		stream := events.MemoryStream(id)
		_, err = tx.Append(stream, 0, ef.Must(stream, events.TypeMemoryCaptured, &c))
		return d, err
	}
	err := st.Update(bg, func(tx *Tx) error {
		p.cursors = func() int64 { s := tx.tx.Stats(); return s.GetCursorCount() }
		for n, body := range []string{"first note", "second note", "third note"} {
			if _, err := capture(tx, n, body); err != nil {
				return err
			}
		}
		if p.opened != 0 {
			t.Errorf("the folds opened %d cursors reading the bodies just put", p.opened)
		}
		// A body put before the last one is read from the bucket.
		old, err := tx.PutBody([]byte("an older body"))
		if err != nil {
			return err
		}
		if _, err := tx.PutBody([]byte("the newest body")); err != nil {
			return err
		}
		if string(tx.Body(old)) != "an older body" {
			t.Errorf("older body read %q", tx.Body(old))
		}
		last, err := tx.PutBody([]byte("deleted in its tx"))
		if err != nil {
			return err
		}
		if err := tx.DeleteBody(last); err != nil {
			return err
		}
		if b := tx.Body(last); b != nil {
			t.Errorf("a body deleted in its tx reads %q", b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(put) != 3 || !slices.Equal(p.read, put) {
		t.Errorf("folds read %q, want %q", p.read, put)
	}
}

// PutBody seeks its key once (bbolt's Put), and putting a stored body again
// keeps it, one key.
func TestPutBodySeeksOnce(t *testing.T) {
	st, _ := openTest(t, Options{})
	var d string
	err := st.Update(bg, func(tx *Tx) error {
		cursors := func() int64 { s := tx.tx.Stats(); return s.GetCursorCount() }
		before := cursors()
		var err error
		if d, err = tx.PutBody([]byte("remember this")); err != nil {
			return err
		}
		if n := cursors() - before; n != 1 {
			t.Errorf("PutBody of a new body opened %d cursors, want 1", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(bg, func(tx *Tx) error {
		if _, err := tx.PutBody([]byte("remember this")); err != nil {
			return err
		}
		if n := tx.bodies.Stats().KeyN; n != 1 {
			t.Errorf("%d bodies stored, want 1", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = st.View(func(r *Reader) error {
		if string(r.Body(d)) != "remember this" {
			t.Errorf("body after a second put: %q", r.Body(d))
		}
		return nil
	})
}
