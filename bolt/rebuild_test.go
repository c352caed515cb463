package bolt

import (
	"context"
	"errors"
	"testing"

	"github.com/tree-ring/tree-ring/events/fold"
	bbolt "go.etcd.io/bbolt"
)

// projectionBytes dumps a projection's bucket.
func projectionBytes(t *testing.T, st *Store, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := st.View(func(r *Reader) error {
		return r.Projection(name).ForEach(nil, func(k, v []byte) error { out[string(k)] = string(v); return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRebuildReproducesInlineProjection(t *testing.T) {
	f := newFactory()
	projs := []fold.Projection{testProjection()}
	st, _ := openTest(t, Options{Projections: projs})
	for i := range 20 {
		mustAppend(t, st, "run/a", AnyVersion, f.run("a", i))
		if i%4 == 0 {
			mustAppend(t, st, "harness/h", AnyVersion, f.trust("h"))
		}
	}
	inline := projectionBytes(t, st, "test_counts")
	if len(inline) != 4 {
		t.Fatalf("inline projection has %d keys", len(inline))
	}
	var seen []uint64
	n, err := st.Rebuild(bg, func(done, total uint64) { seen = append(seen, done, total) })
	if err != nil || n != 25 {
		t.Fatalf("rebuild: %d %v", n, err)
	}
	if len(seen) != 2 || seen[0] != 25 || seen[1] != 25 {
		t.Errorf("progress %v", seen)
	}
	rebuilt := projectionBytes(t, st, "test_counts")
	if len(rebuilt) != len(inline) {
		t.Fatalf("rebuilt %v, inline %v", rebuilt, inline)
	}
	for k, v := range inline {
		if rebuilt[k] != v {
			t.Errorf("key %q: rebuilt %x, inline %x", k, rebuilt[k], v)
		}
	}
	// Still live: the next append folds inline.
	mustAppend(t, st, "run/a", AnyVersion, f.run("a", 99))
	if got := projectionBytes(t, st, "test_counts")["type/run.started"]; got[7] != 21 {
		t.Errorf("count after rebuild and append: %x", got)
	}
}

// TestProjectionVersionChangeRebuildsOnOpen: a store opened with a new
// version of a projection drops and refolds it.
func TestProjectionVersionChangeRebuildsOnOpen(t *testing.T) {
	f := newFactory()
	st, path := openTest(t, Options{Projections: []fold.Projection{testProjection()}})
	mustAppend(t, st, "run/a", 0, f.run("a", 1), f.run("a", 2))
	st.Close()
	v2 := &countProjection{name: "test_counts", version: 2}
	st2, err := Open(path, Options{Projections: []fold.Projection{v2}})
	if err != nil {
		t.Fatal(err)
	}
	if got := projectionBytes(t, st2, "test_counts")["stream/run/a"]; got != "\x00\x00\x00\x00\x00\x00\x00\x02run.started" {
		t.Errorf("not refolded at version 2: %q", got)
	}
	if _, err := st2.Verify(bg); err != nil {
		t.Fatal(err)
	}
	st2.Close()
	// Leave the ledger at version 1 for the cleanup check.
	st3, err := Open(path, Options{Projections: []fold.Projection{testProjection()}})
	if err != nil {
		t.Fatal(err)
	}
	st3.Close()
}

// TestInterruptedRebuildResumesOnOpen: a rebuild cancelled after its drop
// leaves the projection behind; it is not folded inline meanwhile and the
// next open catches it up.
func TestInterruptedRebuildResumesOnOpen(t *testing.T) {
	f := newFactory()
	projs := []fold.Projection{testProjection()}
	st, path := openTest(t, Options{Projections: projs})
	for i := range 5 {
		mustAppend(t, st, "run/a", AnyVersion, f.run("a", i))
	}
	want := projectionBytes(t, st, "test_counts")
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := st.Rebuild(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled rebuild: %v", err)
	}
	if got := projectionBytes(t, st, "test_counts"); len(got) != 0 {
		t.Fatalf("projection after drop: %v", got)
	}
	mustAppend(t, st, "run/a", AnyVersion, f.run("a", 5)) // not folded: the projection is behind
	if _, err := st.Verify(bg); err != nil {
		t.Fatalf("verify with a projection behind: %v", err)
	}
	st.Close()
	st, err := Open(path, Options{Projections: projs})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got := projectionBytes(t, st, "test_counts")
	if got["type/run.started"][7] != 6 || len(got) != len(want) {
		t.Fatalf("not caught up: %v", got)
	}
	_ = st.db.View(func(tx *bbolt.Tx) error {
		if !st.projectionsCurrent(tx) {
			t.Error("projection not at the head after open")
		}
		return nil
	})
}
