package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/fold"
	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/tree-ring/tree-ring/projections"
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

// allProjectionBytes dumps every projection's bucket, by name.
func allProjectionBytes(t *testing.T, st *Store, projs []fold.Projection) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, p := range projs {
		out[p.Name()] = projectionBytes(t, st, p.Name())
	}
	return out
}

// appendMixedHistory appends, in transactions of 1 to 300 events, what
// every registered projection folds: memories captured (with their
// bodies), superseded, redacted and deleted, some in the transaction that
// captured them and some later; runs started and finished; harness
// transitions; a store initialization.
func appendMixedHistory(t *testing.T, st *Store) {
	t.Helper()
	f := newFactory()
	ef := f.events()
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var ids, digests []string
	n := 0
	for _, size := range []int{1, 7, 300, 1, 120, 300, 7, 64, 65} {
		err := st.Update(bg, func(tx *Tx) error {
			for range size {
				n++
				id := fmt.Sprintf("mem_diff_%05d", n)
				r := memory.NewRecord(id, fmt.Sprintf("Note %d about subsystem %d and its cache.", n, n%13), "lesson", base.Add(time.Duration(n)*time.Minute))
				if n%9 == 4 {
					r.Summary = "A summary several memories share." // duplicates
				}
				r.Project = memory.Str([]string{"alpha", "beta"}[n%2])
				r.Salience = float64(n%10) / 10
				p, body := r.Split(events.OriginImport, fmt.Sprintf("%032x", n))
				d, err := tx.PutBody(body)
				if err != nil {
					return err
				}
				stream := events.MemoryStream(id)
				if _, err := tx.Append(stream, 0, ef.Must(stream, events.TypeMemoryCaptured, &p)); err != nil {
					return err
				}
				ids, digests = append(ids, id), append(digests, d)
				if err := actOnMemory(tx, ef, ids, digests, n); err != nil {
					return err
				}
				if n%5 == 0 {
					if err := appendRun(tx, ef, n); err != nil {
						return err
					}
				}
				if n%37 == 0 {
					if _, err := tx.Append(events.HarnessStream(fmt.Sprintf("h%d", n%3)), AnyVersion, f.trust(fmt.Sprintf("h%d", n%3))); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// appendRun starts a run and, for even n, finishes it.
func appendRun(tx *Tx, ef *events.Factory, n int) error {
	p := testRunPayload(fmt.Sprintf("r%d", n), n)
	stream := events.RunStream(p.RunID)
	evs := []events.Envelope{ef.Must(stream, events.TypeRunStarted, p)}
	if n%2 == 0 {
		evs = append(evs, ef.Must(stream, events.TypeRunFinished, &events.RunFinished{
			RunID: p.RunID, ScopeKey: p.ScopeKey, Status: events.RunStatusSucceeded, Stage: p.Stage,
			EndedAt: p.StartedAt, DurationMS: int64(n),
		}))
	}
	_, err := tx.Append(stream, 0, evs...)
	return err
}

// actOnMemory supersedes, redacts or deletes (by n) the newest memory or
// one of an earlier transaction, once each.
func actOnMemory(tx *Tx, ef *events.Factory, ids, digests []string, n int) error {
	k := n % 11
	if k != 1 && k != 3 && k != 5 {
		return nil
	}
	i := len(ids) - 1
	if n%4 != 0 {
		i = (n * 7919) % len(ids)
	}
	if digests[i] == "" {
		return nil
	}
	id, d := ids[i], digests[i]
	stream := events.MemoryStream(id)
	var e events.Envelope
	switch k {
	case 1:
		e = ef.Must(stream, events.TypeMemorySuperseded, &events.MemorySuperseded{MemoryID: id, SupersededBy: "mem_replacement"})
	default:
		p := events.MemoryForgotten{MemoryID: id, Mode: events.ForgetDelete, ReasonSHA256: d, ReasonChars: 3}
		if k == 3 {
			rd, err := tx.PutBody(memory.RedactedBody(id))
			if err != nil {
				return err
			}
			p.Mode, p.RedactedSHA256 = events.ForgetRedact, rd
		}
		// As forget does: the event first (the recall fold tokenizes the
		// body to find the memory's postings), then the body goes.
		e = ef.Must(stream, events.TypeMemoryForgotten, &p)
		digests[i] = ""
		if _, err := tx.Append(stream, int64(tx.StreamVersion(stream)), e); err != nil {
			return err
		}
		return tx.DeleteBody(d)
	}
	digests[i] = ""
	_, err := tx.Append(stream, int64(tx.StreamVersion(stream)), e)
	return err
}

// TestRebuildIsTheInlineFoldOfEveryProjection is the differential test of
// the rebuild: every registered projection, folded inline by the appends
// (the Factory's checked payloads, batched per transaction), is byte for
// byte what Rebuild folds from the stored events (decoded once for all
// projections, the batching ones on goroutines of their own), in chunks of
// the default size and in slices of 64 events, those cancelled after three
// slices (no goroutine left, the live projections unchanged) and resumed.
func TestRebuildIsTheInlineFoldOfEveryProjection(t *testing.T) {
	projs := projections.All()
	for name, opts := range map[string]Options{
		"chunks": {Projections: projs},
		"slices": {Projections: projs, SliceBudget: time.Nanosecond},
	} {
		t.Run(name, func(t *testing.T) {
			st, _ := openTest(t, opts)
			appendMixedHistory(t, st)
			inline := allProjectionBytes(t, st, projs)
			for _, p := range projs {
				if len(inline[p.Name()]) == 0 && p.Name() != "manifest" {
					t.Errorf("the history left projection %s empty: nothing to compare", p.Name())
				}
			}
			if opts.SliceBudget > 0 {
				// Cancelled after three slices, then resumed.
				ctx, cancel := context.WithCancel(bg)
				slices := 0
				_, err := st.Rebuild(ctx, func(uint64, uint64) {
					if slices++; slices == 3 {
						cancel()
					}
				})
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("cancelled rebuild: %v", err)
				}
				if blocked := blockedFolds(); blocked != "" {
					t.Fatalf("a fold goroutine outlived the cancelled rebuild:\n%s", blocked)
				}
				if got := allProjectionBytes(t, st, projs); !maps.EqualFunc(got, inline, maps.Equal) {
					t.Fatal("a cancelled rebuild changed the live projections")
				}
			}
			if _, err := st.Rebuild(bg, nil); err != nil {
				t.Fatal(err)
			}
			rebuilt := allProjectionBytes(t, st, projs)
			for _, p := range projs {
				if !maps.Equal(rebuilt[p.Name()], inline[p.Name()]) {
					t.Errorf("projection %s: rebuilt %d keys differ from the inline fold's %d", p.Name(), len(rebuilt[p.Name()]), len(inline[p.Name()]))
				}
			}
		})
	}
}

// blockedFolds returns the stacks of the goroutines of a fold (chunk.run)
// that are waiting for something: leaked. One that has signalled its end
// and not yet exited is runnable, not waiting.
func blockedFolds() string {
	buf := make([]byte, 1<<20)
	var out []string
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		state := g[strings.Index(g, "[")+1 : strings.Index(g, "]")]
		if strings.Contains(g, "bolt.(*chunk).run") && state != "runnable" && state != "running" {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// failAt is a projection whose fold fails at one position.
type failAt struct {
	name string
	at   uint64
}

func (p failAt) Name() string        { return p.name }
func (p failAt) Version() int        { return 1 }
func (p failAt) Handles(string) bool { return true }
func (p failAt) Apply(kv fold.KV, _ fold.Bodies, e *events.Envelope) error {
	if e.Position == p.at {
		return fmt.Errorf("refused at %d", p.at)
	}
	return kv.Put([]byte("last"), binary.BigEndian.AppendUint64(nil, e.Position))
}

// batchedFailAt is failAt as a fold.Batcher, folded on a goroutine of its
// own by a rebuild, that writes many keys per event as batching folds do:
// slower than the decoding, so the decoding waits on its input.
type batchedFailAt struct{ failAt }

func (batchedFailAt) Batch(kv fold.KV) fold.Batch { return fold.NewOverlay(kv) }

func (p batchedFailAt) Apply(kv fold.KV, b fold.Bodies, e *events.Envelope) error {
	for i := range 64 {
		if err := kv.Put(fmt.Appendf(nil, "k%d/%d", e.Position%97, i), []byte("v")); err != nil {
			return err
		}
	}
	return p.failAt.Apply(kv, b, e)
}

// TestRebuildReportsTheFirstFailureAndLeavesNoGoroutine: projections that
// fail at different positions, folded concurrently (batched ones on their
// own goroutines, the others inline), give the error the sequential fold
// meets first (the lowest position, whichever projection and goroutine
// failed first), as a CorruptError; the live projections and the ledger
// are unchanged, and no goroutine of the fold outlives it.
func TestRebuildReportsTheFirstFailureAndLeavesNoGoroutine(t *testing.T) {
	f := newFactory()
	st, path := openTest(t, Options{Projections: []fold.Projection{testProjection()}})
	// Far more events after the first failure than the channels hold: a
	// goroutine that failed must still drain its input for the decoding to
	// reach the end of the chunk.
	for i := range 1500 {
		mustAppend(t, st, "run/a", AnyVersion, f.run("a", i))
	}
	st.Close()
	damaged[path] = true // the failing projections cannot be verified
	for _, order := range [][]fold.Projection{
		// 860 is in the middle of the third batch of the second chunk
		// (501-1500): the decoding is then waiting to hand the failing
		// goroutine more.
		{batchedFailAt{failAt{"a_late", 1150}}, testProjection(), failAt{"b_early", 860}},
		{batchedFailAt{failAt{"a_early", 860}}, testProjection(), failAt{"b_late", 1150}},
		{batchedFailAt{failAt{"a_late", 1150}}, batchedFailAt{failAt{"b_early", 860}}},
	} {
		st, err := Open(path, Options{Rebuilding: true, Projections: order})
		if err != nil {
			t.Fatal(err)
		}
		before := projectionBytes(t, st, "test_counts")
		_, err = st.Rebuild(bg, nil)
		var ce *CorruptError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "position 860: projection") || !strings.Contains(err.Error(), "refused at 860") {
			t.Errorf("rebuild: %v, want the failure at position 860", err)
		}
		if blocked := blockedFolds(); blocked != "" {
			t.Errorf("a fold goroutine outlived the failed rebuild:\n%s", blocked)
		}
		if got := projectionBytes(t, st, "test_counts"); !maps.Equal(got, before) {
			t.Error("a failed rebuild changed the live projection")
		}
		st.Close()
	}
}
