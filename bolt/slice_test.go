package bolt

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events/fold"
)

const sliceChildEnv = "TREE_RING_SLICE_CHILD"

// sliceEvents is the export the slice tests import: the child and the
// parent build the same one.
const sliceEvents = 2_000

// sliceChild imports sliceEvents events into the ledger at path, one
// slice per transaction (a budget of 1 ns ends each after 63 events), and
// kills itself with SIGKILL right after the third slice committed.
func sliceChild(path string) {
	st, err := Open(path, Options{LockTimeout: 10 * time.Second, SliceBudget: time.Nanosecond, Projections: []fold.Projection{testProjection()}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	slices := 0
	_, err = st.ImportProgress(bg, benchEnvelopes(sliceEvents), func(done, total uint64) {
		if slices++; slices == 3 {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Minute)
		}
	})
	fmt.Fprintln(os.Stderr, "child: import ended:", err)
	os.Exit(1)
}

// TestImportKilledBetweenSlicesResumes: an import killed between two slices
// left exactly the slices it committed; another writer appends meanwhile (a
// hook); the same import run again imports the rest, skipping what landed,
// and the ledger verifies (chain, indexes, projections re-folded).
func TestImportKilledBetweenSlicesResumes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	projs := []fold.Projection{testProjection()}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), sliceChildEnv+"="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child was not killed between slices: %v %s", err, stderr.String())
	}
	st, err := Open(path, Options{Projections: projs})
	if err != nil {
		t.Fatalf("open after kill: %v", err)
	}
	t.Cleanup(func() { st.Close(); checkLedger(t, path, projs, true) })
	if head, _, err := st.Head(); err != nil || head != 3*63 {
		t.Fatalf("after the kill: head %d (%v), want the 3 committed slices of 63", head, err)
	}
	f := newFactory()
	hook := f.run("hook", 1)
	hook.ID[6] = 0xee // distinct from the imported ids
	mustAppend(t, st, "run/hook", 0, hook)

	envs := benchEnvelopes(sliceEvents)
	res, err := st.Import(bg, envs)
	if err != nil || res != (ImportResult{Imported: sliceEvents - 3*63, Skipped: 3 * 63}) {
		t.Fatalf("resumed import: %+v %v", res, err)
	}
	got := readAll(t, st)
	if len(got) != sliceEvents+1 {
		t.Fatalf("%d events after the resume, want %d", len(got), sliceEvents+1)
	}
	seen := map[[16]byte]bool{}
	for i, e := range got {
		if seen[e.ID] {
			t.Fatalf("event %s twice", e.ID)
		}
		seen[e.ID] = true
		if i > 0 && e.PrevHash != got[i-1].Hash {
			t.Fatalf("chain broken at position %d", e.Position)
		}
	}
	if got[3*63].ID != hook.ID {
		t.Errorf("position %d is %s, want the hook's event between the slices", 3*63+1, got[3*63].ID)
	}
	if _, err := st.Verify(bg); err != nil {
		t.Fatal(err)
	}
}

// TestSlicedImportLetsWritersIn: while one Store imports with a slice
// budget, other Stores on the same file (as other processes would; bbolt's
// flock is per open file) open, append and close, and their events land
// between the import's slices, not after it.
func TestSlicedImportLetsWritersIn(t *testing.T) {
	projs := []fold.Projection{testProjection()}
	st, path := openTest(t, Options{Projections: projs, SliceBudget: 5 * time.Millisecond})
	const n = 20_000
	waits, hookPos := hooksDuring(t, path, projs, func() {
		if _, err := st.Import(bg, benchEnvelopes(n)); err != nil {
			t.Error(err)
		}
		st.Close() // a hook waiting now gets in; the cleanup closes again
	})
	if len(hookPos) == 0 {
		t.Fatal("no hook ran")
	}
	st, err := Open(path, Options{Projections: projs})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	head, _, err := st.Head()
	if err != nil {
		t.Fatal(err)
	}
	inside := 0
	for _, p := range hookPos {
		if p < head-uint64(len(hookPos)) {
			inside++
		}
	}
	if inside == 0 {
		t.Errorf("hook events at %v, head %d: none landed between the import's slices", hookPos, head)
	}
	t.Logf("%d hooks, %d inside the import; longest wait %v", len(hookPos), inside, slices.Max(waits))
}

// hooksDuring runs work while a goroutine plays hooks on the ledger at
// path: open (timing the wait for the lock), append one event, close, until
// work returns. It returns each hook's wait and its event's position.
func hooksDuring(tb testing.TB, path string, projs []fold.Projection, work func()) ([]time.Duration, []uint64) {
	tb.Helper()
	var (
		waits []time.Duration
		pos   []uint64
		wg    sync.WaitGroup
	)
	stop := make(chan struct{})
	started := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		f := newFactory()
		close(started)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			t0 := time.Now()
			h, err := Open(path, Options{LockTimeout: 10 * time.Second, Projections: projs})
			if err != nil {
				tb.Error(err)
				return
			}
			waits = append(waits, time.Since(t0))
			e := f.run("hook", i)
			e.ID[6] = 0xee // distinct from the imported ids
			p, err := h.Append(bg, e.Stream, AnyVersion, e)
			h.Close()
			if err != nil {
				tb.Error(err)
				return
			}
			pos = append(pos, p[0])
		}
	}()
	<-started
	work()
	close(stop)
	wg.Wait()
	return waits, pos
}

// BenchmarkHookWaitDuringImport: the longest and median wait of a hook
// (open, one append, close, every 10 ms) for the ledger lock while
// Import of TREE_RING_BENCH_EVENTS (default 1,000,000) events runs with a
// slice budget of 30 ms, as the long commands open it
// (TREE_RING_BENCH_SLICE_MS overrides it).
//
//	go test -run '^$' -bench HookWait -benchtime 1x -timeout 60m ./bolt/
func BenchmarkHookWaitDuringImport(b *testing.B) {
	n := benchEventCount()
	envs := benchEnvelopes(n)
	projs := []fold.Projection{testProjection()}
	budget := 30 * time.Millisecond // as cmd/tree-ring's sliceBudget
	if ms, err := strconv.Atoi(os.Getenv("TREE_RING_BENCH_SLICE_MS")); err == nil && ms > 0 {
		budget = time.Duration(ms) * time.Millisecond
	}
	for range b.N {
		path := filepath.Join(b.TempDir(), "ledger.db")
		st, err := Open(path, Options{Projections: projs, SliceBudget: budget})
		if err != nil {
			b.Fatal(err)
		}
		c := startClock()
		waits, _ := hooksDuring(b, path, projs, func() {
			if _, err := st.Import(bg, envs); err != nil {
				b.Error(err)
			}
			st.Close()
		})
		report(b, n, c)
		slices.Sort(waits)
		b.ReportMetric(float64(len(waits)), "hooks")
		b.ReportMetric(float64(waits[len(waits)/2].Microseconds())/1000, "p50-wait-ms")
		b.ReportMetric(float64(waits[len(waits)*99/100].Microseconds())/1000, "p99-wait-ms")
		b.ReportMetric(float64(waits[len(waits)-1].Microseconds())/1000, "max-wait-ms")
	}
}

// TestImportSkipsWhatOthersAppendedBetweenSlices: an event of the import
// that another writer appended between two slices is skipped, not
// appended twice; one appended there with other content refuses the rest.
func TestImportSkipsWhatOthersAppendedBetweenSlices(t *testing.T) {
	projs := []fold.Projection{testProjection()}
	for _, tc := range []struct {
		name    string
		change  bool
		wantErr bool
	}{{"same content", false, false}, {"other content", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := openTest(t, Options{Projections: projs, SliceBudget: time.Nanosecond})
			envs := benchEnvelopes(300)
			calls := 0
			res, err := st.ImportProgress(bg, envs, func(done, _ uint64) {
				if calls++; calls != 1 {
					return
				}
				e := envs[200]
				if tc.change {
					e.Actor = "someone-else"
				}
				if _, err := st.Append(bg, e.Stream, AnyVersion, e); err != nil {
					t.Fatal(err)
				}
			})
			if tc.wantErr {
				if !IsConflict(err) {
					t.Fatalf("import: %+v %v, want a conflict", res, err)
				}
				return
			}
			if err != nil || res != (ImportResult{Imported: 299, Skipped: 1}) {
				t.Fatalf("import: %+v %v", res, err)
			}
			if got := readAll(t, st); len(got) != 300 {
				t.Fatalf("%d events, want 300", len(got))
			}
		})
	}
}
