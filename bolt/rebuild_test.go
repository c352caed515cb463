package bolt

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

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

// TestProjectionLayoutChangeMigratesOnlyWhenAsked: a store opened with a
// new version of a projection (or a projection it never folded) is refused
// by every open that neither migrates nor rebuilds, read-only included,
// without a byte changed; a write open with Migrate drops and refolds it,
// and so does Rebuild on an open with Rebuilding.
func TestProjectionLayoutChangeMigratesOnlyWhenAsked(t *testing.T) {
	f := newFactory()
	st, path := openTest(t, Options{Projections: []fold.Projection{testProjection()}})
	mustAppend(t, st, "run/a", 0, f.run("a", 1), f.run("a", 2))
	st.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v2 := &countProjection{name: "test_counts", version: 2}
	added := &countProjection{name: "test_added", version: 1}
	for name, opts := range map[string]Options{
		"write at a new version": {Projections: []fold.Projection{v2}},
		"read at a new version":  {ReadOnly: true, Projections: []fold.Projection{v2}},
		"write with a new one":   {Projections: []fold.Projection{testProjection(), added}},
	} {
		_, err := Open(path, opts)
		var pe *ProjectionMigrationError
		if !errors.As(err, &pe) || !NeedsMigration(err) || !strings.Contains(err.Error(), "run `tree-ring init`") {
			t.Fatalf("%s: %v, want a *ProjectionMigrationError naming init", name, err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
			t.Fatalf("%s: the refused open changed the ledger", name)
		}
	}
	st2, err := Open(path, Options{Migrate: true, Projections: []fold.Projection{v2}})
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
	// Back to version 1 through the explicit rebuild: the open leaves the
	// projection alone (not folded inline), Rebuild swaps in version 1.
	st3, err := Open(path, Options{Rebuilding: true, Projections: []fold.Projection{testProjection()}})
	if err != nil {
		t.Fatal(err)
	}
	defer st3.Close()
	mustAppend(t, st3, "run/a", AnyVersion, f.run("a", 3))
	if got := projectionBytes(t, st3, "test_counts")["stream/run/a"]; got != "\x00\x00\x00\x00\x00\x00\x00\x02run.started" {
		t.Errorf("a projection left to the rebuild was folded inline: %q", got)
	}
	if _, err := st3.Rebuild(bg, nil); err != nil {
		t.Fatal(err)
	}
	if got := projectionBytes(t, st3, "test_counts")["stream/run/a"]; got != "\x00\x00\x00\x00\x00\x00\x00\x03" {
		t.Errorf("not rebuilt at version 1: %q", got)
	}
	if _, err := st3.Verify(bg); err != nil {
		t.Fatal(err)
	}
}

// TestInterruptedRebuildKeepsLiveProjection: a rebuild cancelled between
// slices leaves the live projection as it was, still folded inline; the
// next Rebuild resumes its shadow from the recorded position and swaps in
// the same state.
func TestInterruptedRebuildKeepsLiveProjection(t *testing.T) {
	f := newFactory()
	projs := []fold.Projection{testProjection()}
	st, _ := openTest(t, Options{Projections: projs, SliceBudget: time.Nanosecond})
	for i := range 200 {
		mustAppend(t, st, "run/a", AnyVersion, f.run("a", i))
	}
	want := projectionBytes(t, st, "test_counts")
	ctx, cancel := context.WithCancel(bg)
	var slices []uint64
	if _, err := st.Rebuild(ctx, func(done, _ uint64) { slices = append(slices, done); cancel() }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled rebuild: %v", err)
	}
	if len(slices) != 1 || slices[0] != 63 {
		t.Fatalf("slices before the cancel: %v", slices)
	}
	if got := projectionBytes(t, st, "test_counts"); !maps.Equal(got, want) {
		t.Fatalf("live projection changed by an unfinished rebuild: %v", got)
	}
	mustAppend(t, st, "run/a", AnyVersion, f.run("a", 200)) // folded inline: still live
	if got := projectionBytes(t, st, "test_counts")["type/run.started"]; got[6] != 0 || got[7] != 201 {
		t.Fatalf("not folded inline during the rebuild: %x", got)
	}
	if _, err := st.Verify(bg); err != nil {
		t.Fatalf("verify mid-rebuild: %v", err)
	}
	want = projectionBytes(t, st, "test_counts")
	slices = nil
	n, err := st.Rebuild(bg, func(done, _ uint64) { slices = append(slices, done) })
	if err != nil || n != 201 {
		t.Fatalf("resumed rebuild: %d %v", n, err)
	}
	if slices[0] != 126 || slices[len(slices)-1] != 201 {
		t.Errorf("resumed slices %v: want the first to end at 126 (63 more), the last at 201", slices)
	}
	if got := projectionBytes(t, st, "test_counts"); !maps.Equal(got, want) {
		t.Fatalf("rebuilt %v, want %v", got, want)
	}
	_ = st.db.View(func(tx *bbolt.Tx) error {
		if !st.projectionsCurrent(tx) {
			t.Error("projection not at the head after the rebuild")
		}
		if tx.Bucket(bucketRebuild) != nil {
			t.Error("rebuild state left behind")
		}
		return nil
	})
}
