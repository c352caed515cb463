package bolt

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events/fold"
	bbolt "go.etcd.io/bbolt"
)

// bucketDigests is every top-level bucket's sequence and a digest of its
// keys and values in order (nested buckets by name), of a closed ledger.
func bucketDigests(t *testing.T, path string) map[string]string {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]string{}
	err = db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			h := sha256.New()
			err := b.ForEach(func(k, v []byte) error {
				fmt.Fprintf(h, "%x=%x;", k, v)
				return nil
			})
			out[string(name)] = fmt.Sprintf("seq %d keys %d %x", b.Sequence(), b.Stats().KeyN, h.Sum(nil))
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCompactKeepsEveryByteAndShrinks(t *testing.T) {
	f := newFactory()
	opts := Options{Projections: []fold.Projection{testProjection()}}
	st, path := openTest(t, opts)
	var digests []string
	for i := 0; i < 40; i++ {
		err := st.Update(bg, func(tx *Tx) error {
			for j := 0; j < 50; j++ {
				e := f.run(fmt.Sprintf("r%d", (i*50+j)%300), j)
				if _, err := tx.Append(e.Stream, AnyVersion, e); err != nil {
					return err
				}
				d, err := tx.PutBody(fmt.Appendf(nil, "body %d %d with some text to take room", i, j))
				if err != nil {
					return err
				}
				digests = append(digests, d)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Deleting bodies leaves free pages.
	if err := st.Update(bg, func(tx *Tx) error {
		for _, d := range digests[:len(digests)/2] {
			if err := tx.DeleteBody(d); err != nil {
				return err
			}
		}
		e := f.run("after-delete", 0)
		_, err := tx.Append(e.Stream, AnyVersion, e)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	want := bucketDigests(t, path)
	st, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := st.Compact(bg)
	if err != nil {
		t.Fatal(err)
	}
	// bbolt's own commits of the copy leave a page or two free.
	if rep.Before.FreePages < 50 || rep.After.FreePages > 4 {
		t.Errorf("free pages before %d after %d: want many, then almost none", rep.Before.FreePages, rep.After.FreePages)
	}
	if rep.After.FileBytes >= rep.Before.FileBytes || rep.Verified.Events != 2001 {
		t.Errorf("file %d -> %d bytes, verified %d events: want smaller, 2001", rep.Before.FileBytes, rep.After.FileBytes, rep.Verified.Events)
	}
	// The Store goes on working on the new file.
	e := f.run("after-compact", 0)
	if _, err := st.Append(bg, e.Stream, AnyVersion, e); err != nil {
		t.Fatal(err)
	}
	st.Close()
	got := bucketDigests(t, path)
	for name, d := range want {
		if name == "events" || name == "meta" || name == "heads" || name == "stream_blocks" || name == "id_blocks" || name == "p/test_counts" || name == "projection_checkpoints" {
			continue // the later append changed these
		}
		if got[name] != d {
			t.Errorf("bucket %s changed: %s, want %s", name, got[name], d)
		}
	}
	if len(got) != len(want) {
		t.Errorf("buckets %v, want %v", got, want)
	}
	st, err = Open(path, Options{ReadOnly: true, Projections: opts.Projections})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if rep, err := st.Verify(bg); err != nil || rep.Events != 2002 {
		t.Fatalf("verify after compact: %d events, %v", rep.Events, err)
	}
}

func TestCompactCopyIsByteIdentical(t *testing.T) {
	f := newFactory()
	opts := Options{Projections: []fold.Projection{testProjection()}}
	st, path := openTest(t, opts)
	for i := 0; i < 500; i++ {
		e := f.run(fmt.Sprintf("r%d", i%7), i)
		if _, err := st.Append(bg, e.Stream, AnyVersion, e); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	want := bucketDigests(t, path)
	compactClosed(t, path, opts)
	got := bucketDigests(t, path)
	for name, d := range want {
		if got[name] != d {
			t.Errorf("bucket %s: %s, want %s", name, got[name], d)
		}
	}
}

// TestOpenFollowsAReplacedLedger: a process that opened the ledger before
// `ledger compact` renamed the compacted file over it finds, once locked,
// that the path names another file (namesFile), and opens it again.
func TestOpenFollowsAReplacedLedger(t *testing.T) {
	st, path := openTest(t, Options{})
	st.Close()
	old, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if same, err := namesFile(path, old); err != nil || !same {
		t.Fatalf("before the rename: same %v, %v", same, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".new", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	if same, err := namesFile(path, old); err != nil || same {
		t.Fatalf("after the rename: same %v, %v; want false", same, err)
	}
}

func TestCompactRefusesASlicedOrReadOnlyStore(t *testing.T) {
	st, path := openTest(t, Options{})
	st.Close()
	for _, o := range []Options{{ReadOnly: true}, {SliceBudget: time.Second}} {
		s, err := Open(path, o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Compact(bg); err == nil {
			t.Errorf("%+v: compact succeeded", o)
		}
		s.Close()
	}
}

// TestWaiterOnTheOldFileFollowsTheCompaction: a process blocked on the
// lock of the ledger that `ledger compact` replaces gets that lock when the
// old file is released, finds the path names the compacted file, and
// works on it: it sees an event appended after the compaction, and its own
// append lands in the file that stays.
func TestWaiterOnTheOldFileFollowsTheCompaction(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("waiters announce themselves with open-file-description locks (Linux)")
	}
	f := newFactory()
	opts := Options{Projections: []fold.Projection{testProjection()}}
	st, path := openTest(t, opts)
	for i := range 100 {
		e := f.run(fmt.Sprintf("r%d", i%5), i)
		if _, err := st.Append(bg, e.Stream, AnyVersion, e); err != nil {
			t.Fatal(err)
		}
	}
	late, own := f.run("late", 0), f.run("waiter", 0)
	seen := make(chan uint64, 1)
	go func() {
		var head uint64
		defer func() { seen <- head }()
		w, err := Open(path, Options{LockTimeout: 10 * time.Second, Projections: opts.Projections})
		if err != nil {
			t.Error(err)
			return
		}
		defer w.Close()
		if _, err := w.Append(bg, own.Stream, AnyVersion, own); err != nil {
			t.Error(err)
		}
		_ = w.View(func(r *Reader) error { head, _ = r.Head(); return nil })
	}()
	probe, err := os.Open(path) // the old file
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	for t0 := time.Now(); !announced(probe); time.Sleep(time.Millisecond) {
		if time.Since(t0) > 10*time.Second {
			t.Fatal("the waiter never announced itself")
		}
	}
	if _, err := st.Compact(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(bg, late.Stream, AnyVersion, late); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if head := <-seen; head != 102 {
		t.Fatalf("the waiter saw head %d, want 102 (its own append after the late one)", head)
	}
	r, err := Open(path, Options{ReadOnly: true, Projections: opts.Projections})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if rep, err := r.Verify(bg); err != nil || rep.Events != 102 {
		t.Fatalf("verify: %d events, %v", rep.Events, err)
	}
}

// TestCompactPacksAFormat2Ledger: the event values a format-2 build wrote
// (JSON) come out of Compact packed once `tree-ring init` made the ledger
// format 3 (before, compact keeps them), smaller, with the same events,
// and verified.
func TestCompactPacksAFormat2Ledger(t *testing.T) {
	f := newFactory()
	opts := Options{Projections: []fold.Projection{testProjection()}}
	st, path := openTest(t, opts)
	for i := 0; i < 30; i++ {
		if err := st.Update(bg, func(tx *Tx) error {
			for j := 0; j < 100; j++ {
				e := f.run(fmt.Sprintf("r%d", (i*100+j)%300), j)
				if _, err := tx.Append(e.Stream, AnyVersion, e); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	want := readAll(t, st)
	st.Close()
	toFormat2(t, path)
	// Not upgraded: compact keeps it format 2, for the program its hooks run.
	compactClosed(t, path, opts)
	if got, kinds := formatOf(t, path), valueKinds(t, path); got != formatV2 || strings.Trim(kinds, "{") != "" {
		t.Fatalf("compact of a format-2 ledger: format %q, values not all JSON", got)
	}
	migrated := opts
	migrated.Migrate = true
	st, err := Open(path, migrated)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := st.Compact(bg)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, st); !sameEvents(got, want) {
		t.Error("the events differ after compacting a format-2 ledger")
	}
	if _, err := st.Verify(bg); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if got := formatOf(t, path); got != FormatVersion {
		t.Errorf("format %q after compact, want %q", got, FormatVersion)
	}
	unpacked := 0
	readRaw(t, path, func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketEvents).ForEach(func(_, v []byte) error {
			if v[0] != packedTag {
				unpacked++
			}
			return nil
		})
	})
	if unpacked != 0 {
		t.Errorf("%d values left as JSON", unpacked)
	}
	// From a compacted format-2 file: the envelopes, most of it, shrink by
	// more than half.
	if rep.After.FileBytes*10 > rep.Before.FileBytes*6 {
		t.Errorf("compacted %d -> %d bytes, want under 60 %%", rep.Before.FileBytes, rep.After.FileBytes)
	}
	t.Logf("format-2 ledger compacted %d -> %d bytes", rep.Before.FileBytes, rep.After.FileBytes)
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*compact*")); len(matches) != 0 {
		t.Errorf("temporary files left: %v", matches)
	}
}

// compactClosed opens the closed ledger at path, compacts it and closes it.
func compactClosed(t *testing.T, path string, opts Options) {
	t.Helper()
	st, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Compact(bg); err != nil {
		t.Fatal(err)
	}
	st.Close()
}
