package bolt

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/fold"
	bbolt "go.etcd.io/bbolt"
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
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				_ = p.Kill() // SIGKILL (TerminateProcess on Windows)
			}
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

// BenchmarkHookWaitDuringImport: the wait of a hook (open, one append,
// close, every 10 ms) for the ledger lock while Import of
// TREE_RING_BENCH_EVENTS (default 1,000,000) events runs with a slice
// budget of 30 ms, as the long commands open it (TREE_RING_BENCH_SLICE_MS
// overrides it). A hook that arrives mid-slice waits for the slice's
// commit, so the commits' durations (bbolt's spill, page writes and
// syncs) are reported too, with each slice's hold of the lock (from
// taking it to the end of the commit), and the baseline: the same hook's
// open on the finished ledger with nothing else running. TREE_RING_BENCH_HOOKS=0
// runs the import alone (then only the holds say anything).
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
		var commits, holds []time.Duration
		var lastDB *bbolt.DB
		var lastTime time.Duration
		c := startClock()
		during := hooksDuring
		if os.Getenv("TREE_RING_BENCH_HOOKS") == "0" {
			during = func(_ testing.TB, _ string, _ []fold.Projection, work func()) ([]time.Duration, []uint64) {
				work()
				return []time.Duration{0}, nil
			}
		}
		waits, _ := during(b, path, projs, func() {
			// Called after each slice's commit: that db's commit time
			// so far, less what an earlier commit on it took.
			_, err := st.ImportProgress(bg, envs, func(uint64, uint64) {
				ts := st.db.Stats().TxStats
				t := ts.GetSpillTime() + ts.GetWriteTime()
				if st.db != lastDB {
					lastDB, lastTime = st.db, 0
				}
				commits = append(commits, t-lastTime)
				lastTime = t
				holds = append(holds, time.Since(st.since))
			})
			if err != nil {
				b.Error(err)
			}
			st.Close()
		})
		report(b, n, c)
		idle, _ := hooksDuring(b, path, projs, func() { time.Sleep(300 * time.Millisecond) })
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		slices.Sort(waits)
		slices.Sort(commits)
		slices.Sort(idle)
		slices.Sort(holds)
		b.ReportMetric(float64(len(waits)), "hooks")
		b.ReportMetric(ms(waits[len(waits)/2]), "p50-wait-ms")
		b.ReportMetric(ms(waits[len(waits)*99/100]), "p99-wait-ms")
		b.ReportMetric(ms(waits[len(waits)-1]), "max-wait-ms")
		b.ReportMetric(float64(len(commits)), "slices")
		b.ReportMetric(ms(commits[len(commits)/2]), "p50-commit-ms")
		b.ReportMetric(ms(commits[len(commits)*99/100]), "p99-commit-ms")
		b.ReportMetric(ms(commits[len(commits)-1]), "max-commit-ms")
		b.ReportMetric(ms(holds[len(holds)/2]), "p50-hold-ms")
		b.ReportMetric(ms(holds[len(holds)*99/100]), "p99-hold-ms")
		b.ReportMetric(ms(idle[len(idle)/2]), "idle-open-ms")
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

// applyHook is the test projection, calling hook on every event it folds.
type applyHook struct {
	*countProjection
	hook func(e *events.Envelope)
}

func (p applyHook) Apply(kv fold.KV, b fold.Bodies, e *events.Envelope) error {
	p.hook(e)
	return p.countProjection.Apply(kv, b, e)
}

// TestWaiterEndsTheSlice: a process that finds the lock busy announces
// itself, and the long operation holding it ends its slice at its next
// check (every 1,024 envelopes of the import's plan, every 64 of its
// appends), long before its budget (an hour here): the waiter's writes land
// there. Events of the import that the waiter appended between two read
// slices of the plan are skipped, before (found by the plan) or after
// (found by the import) the point where it was interrupted; one with other
// content refuses the import.
func TestWaiterEndsTheSlice(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("waiters announce themselves with open-file-description locks (Linux)")
	}
	const n = 5_000
	for _, tc := range []struct {
		name     string
		inPlan   bool // the waiter comes during the plan, else during the 100th append
		conflict bool // it appends envs[10] with other content
	}{
		{"during the plan", true, false},
		{"during the plan, other content", true, true},
		{"during a slice", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			envs := benchEnvelopes(n)
			var path string
			var arrived atomic.Bool
			var waited chan []uint64
			// waiter opens the ledger as a hook does (blocking while the
			// import holds it) and appends evs; start returns once it
			// announced itself.
			start := func(evs ...events.Envelope) {
				waited = make(chan []uint64, 1)
				go func() {
					var pos []uint64
					defer func() { waited <- pos }()
					h, err := Open(path, Options{LockTimeout: 10 * time.Second, Projections: []fold.Projection{testProjection()}})
					if err != nil {
						t.Error(err)
						return
					}
					defer h.Close()
					for _, e := range evs {
						p, err := h.Append(bg, e.Stream, AnyVersion, e)
						if err != nil {
							t.Error(err)
							return
						}
						pos = append(pos, p...)
					}
				}()
				probe, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer probe.Close()
				for t0 := time.Now(); !announced(probe); time.Sleep(time.Millisecond) {
					if time.Since(t0) > 10*time.Second {
						t.Fatal("the waiter never announced itself")
					}
				}
			}
			f := newFactory()
			hook := f.run("hook", 1)
			hook.ID[6] = 0xee // distinct from the imported ids
			applied := 0
			proj := applyHook{testProjection(), func(e *events.Envelope) {
				if e.Actor != "bench" || tc.inPlan || arrived.Load() {
					return
				}
				if applied++; applied == 100 {
					arrived.Store(true)
					start(hook)
				}
			}}
			st, p := openTest(t, Options{Projections: []fold.Projection{proj}, SliceBudget: time.Hour})
			path = p
			if tc.inPlan {
				first := envs[10] // planned before the interruption
				if tc.conflict {
					first.Actor = "someone-else"
				}
				start(first, envs[3000]) // planned after it
			}
			res, err := st.Import(bg, envs)
			pos := <-waited
			if tc.conflict {
				if !IsConflict(err) {
					t.Fatalf("import: %+v %v, want a conflict", res, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.inPlan {
				if res != (ImportResult{Imported: n - 2, Skipped: 2}) || !slices.Equal(pos, []uint64{1, 2}) {
					t.Fatalf("import %+v, waiter's events at %v: want them first and skipped by the import", res, pos)
				}
			} else if res != (ImportResult{Imported: n}) || len(pos) != 1 || pos[0] < 101 || pos[0] > 100+64+1 {
				t.Fatalf("import %+v, waiter's event at %v: want it within 64 events of the 100th", res, pos)
			}
			if got := readAll(t, st); len(got) != n+len(pos)-map[bool]int{true: 2}[tc.inPlan] {
				t.Fatalf("%d events in the ledger", len(got))
			}
		})
	}
}

// TestReadStreamSlicedLetsAWriterIn: a long read of one stream by a
// read-only store with a slice budget (an hour) ends its read transaction
// for a waiting writer, which appends to that stream; the read goes on
// after it, and sees every event once, the writer's last.
func TestReadStreamSlicedLetsAWriterIn(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("waiters announce themselves with open-file-description locks (Linux)")
	}
	projs := []fold.Projection{testProjection()}
	w, path := openTest(t, Options{Projections: projs})
	f := newFactory()
	const n = 1_000
	evs := make([]events.Envelope, n+1)
	for i := range evs {
		evs[i] = f.run("long", i)
	}
	mustAppend(t, w, "run/long", 0, evs[:n]...)
	w.Close()
	r, err := Open(path, Options{ReadOnly: true, SliceBudget: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	done := make(chan error, 1)
	var got []uint64
	err = r.ReadStreamSliced(bg, "run/long", 0, func(e *events.Envelope) error {
		got = append(got, e.Version)
		if e.Version != 10 {
			return nil
		}
		// A writer arrives mid-read: it blocks on the shared lock and
		// announces itself; the read's next check lets it in.
		go func() {
			h, err := Open(path, Options{LockTimeout: 10 * time.Second, Projections: projs})
			if err == nil {
				_, err = h.Append(bg, "run/long", AnyVersion, evs[n])
				h.Close()
			}
			done <- err
		}()
		probe, err := os.Open(path)
		if err != nil {
			return err
		}
		defer probe.Close()
		for t0 := time.Now(); !announced(probe); time.Sleep(time.Millisecond) {
			if time.Since(t0) > 10*time.Second {
				return errors.New("the writer never announced itself")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := make([]uint64, n+1)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("read versions %v…, %d in all; want 1..%d once each, the writer's last", got[:min(len(got), 20)], len(got), n+1)
	}
}

// TestSliceWorkFollowsItsCommits: the next slice's work is learned from
// the last slice that ran out of time. Where waiters announce themselves it
// doubles while what follows the work (index writes, commit) costs little
// above the floor, up to maxWorkShares budgets, and shrinks to budget/k
// when that part costs k per unit of work; elsewhere it is budget/(1+k).
// Never below minWorkShare of the budget.
func TestSliceWorkFollowsItsCommits(t *testing.T) {
	const budget = 30 * time.Millisecond
	ms := time.Millisecond
	cases := []struct {
		name                  string
		work, after, commit   time.Duration // the slice's work, what followed it, its commit (the floor)
		announce, notAnnounce time.Duration // the next slice's work, within 10 %
	}{
		{"cheap commit: doubles", 60 * ms, 6 * ms, 5 * ms, 120 * ms, budget},
		{"cheap commit at the cap", 960 * ms, 6 * ms, 5 * ms, maxWorkShares * budget, budget},
		{"k = 1/2", 60 * ms, 35 * ms, 5 * ms, 60 * ms, 20 * ms},
		{"k = 2", 30 * ms, 65 * ms, 5 * ms, 15 * ms, 10 * ms},
		{"k = 20: the least share", 10 * ms, 205 * ms, 5 * ms, budget / 8, budget / 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			now := time.Now()
			s := &Store{opts: Options{SliceBudget: budget}, slice: &slicing{work: budget}}
			s.since = now.Add(-c.work - c.after)
			s.slice.timeUp = now.Add(-c.after)
			s.committed(now.Add(-c.commit))
			want := c.notAnnounce
			if waitersAnnounce {
				want = c.announce
			}
			if got := s.slice.work; got < want*9/10 || got > want*11/10 {
				t.Errorf("next work %v, want %v", got, want)
			}
			if !s.slice.timeUp.IsZero() {
				t.Error("timeUp not reset")
			}
		})
	}
}
