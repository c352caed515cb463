package bolt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/fold"
	bbolt "go.etcd.io/bbolt"
)

// exported returns the events of the tamper fixture as another host would
// export them.
func exported(t *testing.T) []events.Envelope {
	t.Helper()
	path, projs := tamperFixture(t)
	st, err := Open(path, Options{ReadOnly: true, Projections: projs})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return readAll(t, st)
}

func TestImport(t *testing.T) {
	src := exported(t)
	f := newFactory()
	projs := []fold.Projection{testProjection()}
	st, _ := openTest(t, Options{Projections: projs})
	// The local ledger already has its own history: imported events are
	// re-chained after it, keeping their ids.
	local := f.run("local", 1)
	local.ID[7] = 0xff // distinct from the fixture's ids
	mustAppend(t, st, "run/local", 0, local)
	res, err := st.Import(bg, src)
	if err != nil || res != (ImportResult{Imported: 5}) {
		t.Fatalf("import: %+v %v", res, err)
	}
	got := readAll(t, st)
	if len(got) != 6 {
		t.Fatalf("%d events", len(got))
	}
	for i, e := range got[1:] {
		if !events.SameContent(&e, &src[i]) || e.Position != uint64(i+2) || e.Version != src[i].Version {
			t.Errorf("event %d: %+v, want content of %+v at position %d", i, e, src[i], i+2)
		}
	}
	if got[1].PrevHash != got[0].Hash {
		t.Error("imported events do not chain to the local head")
	}

	before := txID(t, st)
	res, err = st.Import(bg, src)
	if err != nil || res != (ImportResult{Skipped: 5}) {
		t.Fatalf("re-import: %+v %v", res, err)
	}
	if txID(t, st) != before {
		t.Fatal("a re-import committed")
	}
}

func TestImportDuplicatesInInput(t *testing.T) {
	src := exported(t)
	st, _ := openTest(t, Options{})
	in := append(slices.Clone(src[:3]), src[1], src[3], src[0], src[4])
	res, err := st.Import(bg, in)
	if err != nil || res != (ImportResult{Imported: 5, Skipped: 2}) {
		t.Fatalf("import: %+v %v", res, err)
	}
}

func TestImportRefusesConflicts(t *testing.T) {
	src := exported(t)
	changed := src[2]
	changed.Payload = json.RawMessage(strings.Replace(string(changed.Payload), `"to":"needs-trust"`, `"to":"failed"`, 1))
	changed.Seal(changed.PrevHash)

	t.Run("with the ledger", func(t *testing.T) {
		st, path := openTest(t, Options{})
		if _, err := st.Import(bg, src[:3]); err != nil {
			t.Fatal(err)
		}
		before := fileDigest(t, path)
		_, err := st.Import(bg, []events.Envelope{src[3], changed, src[4]})
		var ie *ImportError
		var idc *IDConflictError
		if !errors.As(err, &ie) || ie.Index != 1 || !errors.As(err, &idc) || idc.Position != 3 {
			t.Fatalf("import: %v", err)
		}
		if fileDigest(t, path) != before {
			t.Fatal("a refused import changed the ledger")
		}
	})
	t.Run("within the input", func(t *testing.T) {
		st, path := openTest(t, Options{})
		before := fileDigest(t, path)
		_, err := st.Import(bg, []events.Envelope{src[0], src[1], src[2], src[3], changed})
		var ie *ImportError
		var in *InputConflictError
		if !errors.As(err, &ie) || ie.Index != 4 || !errors.As(err, &in) || in.First != 2 || !IsConflict(err) {
			t.Fatalf("import: %v", err)
		}
		if fileDigest(t, path) != before {
			t.Fatal("a refused import changed the ledger")
		}
	})
}

// TestImportChunks imports more than one chunk; a cancelled import keeps
// whole chunks only, and a retry completes it.
func TestImportChunks(t *testing.T) {
	defer func(n int) { importChunk = n }(importChunk)
	importChunk = 200
	f := newFactory()
	n := importChunk + importChunk/2
	src := make([]events.Envelope, n)
	for i := range src {
		src[i] = f.run([]string{"a", "b", "c"}[i/30%3], i)
	}
	projs := []fold.Projection{testProjection()}
	st, _ := openTest(t, Options{Projections: projs})
	st.db.NoSync = true
	ctx, cancel := context.WithCancel(bg)
	var calls int
	_, err := st.ImportProgress(ctx, src, func(done, total uint64) {
		calls++
		if done != uint64(importChunk) || total != uint64(n) {
			t.Errorf("progress %d/%d", done, total)
		}
		cancel()
	})
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("cancelled import: %v after %d chunks", err, calls)
	}
	if pos, _, _ := st.Head(); pos != uint64(importChunk) {
		t.Fatalf("head %d after one chunk", pos)
	}
	res, err := st.Import(bg, src)
	if err != nil || res != (ImportResult{Imported: n - importChunk, Skipped: importChunk}) {
		t.Fatalf("retry: %+v %v", res, err)
	}
	got := readAll(t, st)
	for i := range got {
		if got[i].ID != src[i].ID {
			t.Fatalf("event %d out of order", i)
		}
	}
}

// TestImportOfDecodedExport: envelopes as the command decodes them
// (events.DecodeEnvelope, hash verified) keep their stored bytes when
// imported in order into an empty ledger (their seal is not recomputed)
// and are re-chained, hashed again, after a local history. Both ledgers
// verify on close (openTest).
func TestImportOfDecodedExport(t *testing.T) {
	src := exported(t)
	lines := make([][]byte, len(src))
	dec := make([]events.Envelope, len(src))
	for i := range src {
		lines[i] = src[i].Encode()
		var err error
		if dec[i], err = events.DecodeEnvelope(lines[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, local := range []bool{false, true} {
		st, _ := openTest(t, Options{Projections: []fold.Projection{testProjection()}})
		if local {
			e := newFactory().run("local", 1)
			e.ID[7] = 0xff
			mustAppend(t, st, "run/local", 0, e)
		}
		if res, err := st.Import(bg, dec); err != nil || res.Imported != len(dec) {
			t.Fatalf("local history %v: import: %+v %v", local, res, err)
		}
		got := readAll(t, st)
		if local {
			got = got[1:]
		}
		for i := range got {
			same := string(got[i].Encode()) == string(lines[i])
			if same == local {
				t.Errorf("local history %v: event %d stored as %s, exported as %s", local, i, got[i].Encode(), lines[i])
			}
		}
		// The stored bytes are the lines as they were decoded, or the
		// reassigned envelopes' own encoding after the local event.
		var raws []string
		if err := st.ScanRaw(bg, 0, func(_ uint64, raw []byte) error { raws = append(raws, string(raw)); return nil }); err != nil {
			t.Fatal(err)
		}
		if local {
			raws = raws[1:]
		}
		for i := range raws {
			want := string(lines[i])
			if local {
				want = string(got[i].Encode())
			}
			if raws[i] != want {
				t.Errorf("local history %v: event %d stored as %s, want %s", local, i, raws[i], want)
			}
		}
	}
}

// TestImportWritesWhatAppendsWrite: an import (streams interleaved and in
// runs, across transactions and index blocks, after a local history, with
// an event already present and one repeated in the input) leaves every
// bucket byte for byte as appending the same events one by one does.
func TestImportWritesWhatAppendsWrite(t *testing.T) {
	// Chunks of 7 events, and a chunk of every event, whose first batch of
	// values (packBatch) is full before the chunk ends.
	for _, chunk := range []int{7, 1000} {
		t.Run(fmt.Sprintf("chunk=%d", chunk), func(t *testing.T) { importWritesWhatAppendsWrite(t, chunk) })
	}
}

func importWritesWhatAppendsWrite(t *testing.T, chunk int) {
	defer func(n int) { importChunk = n }(importChunk)
	importChunk = chunk
	f := newFactory()
	local := f.run("local", 0)
	local.ID[7] = 0xff // distinct from the input's ids
	var src []events.Envelope
	for i := 0; len(src) < 3*(streamBlockCap+40); i++ {
		// Round robin, with a run of one stream every 16 events.
		name := []string{"a", "b", "c"}[i%3]
		for range 1 + 4*btoi(i%16 == 0) {
			src = append(src, f.run(name, len(src)))
		}
	}
	// The input as the command decodes an export: from its lines.
	in := make([]events.Envelope, 0, len(src)+1)
	for _, line := range sealAll(src) {
		d, err := events.DecodeEnvelopeOwned(line)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, d)
	}
	in = slices.Insert(in, 100, in[40]) // repeated: ids no longer increase
	present := src[5]

	projs := []fold.Projection{testProjection()}
	imp, _ := openTest(t, Options{Projections: projs})
	imp.db.NoSync = true
	mustAppend(t, imp, local.Stream, 0, local)
	mustAppend(t, imp, present.Stream, AnyVersion, present)
	res, err := imp.Import(bg, in)
	if err != nil || res != (ImportResult{Imported: len(src) - 1, Skipped: 2}) {
		t.Fatalf("import: %+v %v", res, err)
	}

	app, _ := openTest(t, Options{Projections: projs})
	app.db.NoSync = true
	mustAppend(t, app, local.Stream, 0, local)
	mustAppend(t, app, present.Stream, AnyVersion, present)
	for i := range src {
		if i != 5 {
			mustAppend(t, app, src[i].Stream, AnyVersion, src[i])
		}
	}
	got, want := dumpBuckets(t, imp), dumpBuckets(t, app)
	if len(got) != len(want) {
		t.Fatalf("%d buckets, appends made %d", len(got), len(want))
	}
	for name, kvs := range want {
		if !slices.Equal(got[name], kvs) {
			t.Errorf("bucket %s differs: import %d entries, appends %d", name, len(got[name])/2, len(kvs)/2)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// dumpBuckets returns every top-level bucket's keys and values, in order.
func dumpBuckets(t *testing.T, st *Store) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := st.db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			kvs := []string{}
			err := b.ForEach(func(k, v []byte) error { kvs = append(kvs, string(k), string(v)); return nil })
			out[string(name)] = kvs
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportSkipsWhatOthersAppendedOutOfIDOrder: an input whose ids do not
// increase (found by a map, not a binary search) still skips an event that
// another writer appended between two slices.
func TestImportSkipsWhatOthersAppendedOutOfIDOrder(t *testing.T) {
	st, _ := openTest(t, Options{SliceBudget: time.Nanosecond})
	envs := benchEnvelopes(300)
	envs[10], envs[250] = envs[250], envs[10]
	calls := 0
	res, err := st.ImportProgress(bg, envs, func(done, _ uint64) {
		if calls++; calls != 1 {
			return
		}
		if done > 250 {
			t.Fatalf("the first slice imported %d events: envs[250] is in already", done)
		}
		mustAppend(t, st, envs[250].Stream, AnyVersion, envs[250]) // found only through the map
	})
	if err != nil || res != (ImportResult{Imported: 299, Skipped: 1}) || calls < 2 {
		t.Fatalf("import: %+v %v after %d slices", res, err, calls)
	}
	if got := readAll(t, st); len(got) != 300 {
		t.Fatalf("%d events, want 300", len(got))
	}
}

// TestImportRereadsABlockAnotherWriterExtended: an import that moved a
// stream's head and last index block in one slice reads both again in the
// next, where another writer appended to that stream in between (the
// ledger verifies on close: every version's block entry points at its
// event).
func TestImportRereadsABlockAnotherWriterExtended(t *testing.T) {
	f := newFactory()
	st, _ := openTest(t, Options{SliceBudget: time.Nanosecond})
	var envs []events.Envelope
	for i := range 300 {
		envs = append(envs, f.run([]string{"a", "b"}[i%2], i))
	}
	other := f.run("a", 1000)
	other.ID[7] = 0xff // not in envs
	calls := 0
	res, err := st.ImportProgress(bg, envs, func(done, _ uint64) {
		if calls++; calls == 1 {
			mustAppend(t, st, other.Stream, AnyVersion, other)
		}
	})
	if err != nil || res != (ImportResult{Imported: 300}) || calls < 2 {
		t.Fatalf("import: %+v %v after %d slices", res, err, calls)
	}
	var vs []uint64
	err = st.ReadStream(bg, other.Stream, 0, func(e *events.Envelope) error { vs = append(vs, e.Version); return nil })
	if err != nil || len(vs) != 151 || vs[150] != 151 {
		t.Fatalf("stream a: %d versions, %v", len(vs), err)
	}
}
