package recall_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/tree-ring/tree-ring/projections"
	"github.com/tree-ring/tree-ring/projections/recall"
)

// The benchmark dataset follows the published performance_smoke: project
// "bench", every 50th memory "Avoid stale deployment rollback cache
// failure {i}." (warning, scar, tags deployment/cache), the rest
// "Implementation note {i} for subsystem {i%17}." (lesson). To exercise
// visibility, one memory in ten is agent-scoped to one of 20 agent
// profiles and one in twenty belongs to another project.

var benchNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

var (
	dsMu   sync.Mutex
	dsRoot = map[int]string{}
)

// dataset returns the root of a ledger holding n memories, built once per
// process.
func dataset(b *testing.B, n int) string {
	dsMu.Lock()
	defer dsMu.Unlock()
	if r, ok := dsRoot[n]; ok {
		return r
	}
	// RECALL_BENCH_DIR keeps datasets between runs (they take a while to
	// build); by default they go to a fresh temporary directory.
	dir := os.Getenv("RECALL_BENCH_DIR")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "recall-bench-"); err != nil {
			b.Fatal(err)
		}
	}
	root := filepath.Join(dir, fmt.Sprintf("n%d", n), ".tree-ring")
	if _, err := os.Stat(filepath.Join(root, bolt.LedgerFile)); err == nil {
		dsRoot[n] = root
		return root
	}
	if err := os.MkdirAll(filepath.Dir(root), 0o700); err != nil {
		b.Fatal(err)
	}
	st, err := bolt.OpenRoot(root, bolt.Options{Projections: projections.All()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	f := &events.Factory{Now: func() time.Time { return benchNow }, NewID: eventstest.IDs(0), Actor: "bench"}
	start := time.Now()
	const chunk = 5000
	for lo := 0; lo < n; lo += chunk {
		err := st.Update(context.Background(), func(tx *bolt.Tx) error {
			for i := lo; i < min(lo+chunk, n); i++ {
				r := benchRecord(i, n)
				p, body := r.Split(events.OriginImport, fmt.Sprintf("%032x", i))
				if _, err := tx.PutBody(body); err != nil {
					return err
				}
				e, err := f.New(events.MemoryStream(r.ID), events.TypeMemoryCaptured, &p)
				if err != nil {
					return err
				}
				if _, err := tx.Append(e.Stream, 0, e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	el := time.Since(start)
	fi, _ := os.Stat(filepath.Join(root, bolt.LedgerFile))
	b.Logf("dataset %d memories: captured in %v (%.0f memories/s), ledger %d MiB", n, el.Round(time.Millisecond), float64(n)/el.Seconds(), fi.Size()>>20)
	dsRoot[n] = root
	return root
}

func benchRecord(i, n int) memory.Record {
	id := fmt.Sprintf("mem_bench_%07d", i)
	created := benchNow.Add(-time.Duration(n-i) * time.Minute)
	r := memory.NewRecord(id, fmt.Sprintf("Implementation note %d for subsystem %d.", i, i%17), "lesson", created)
	if i%50 == 0 {
		r = memory.NewRecord(id, fmt.Sprintf("Avoid stale deployment rollback cache failure %d.", i), "warning", created)
		r.Ring, r.Tags = "scar", []string{"deployment", "cache"}
	}
	r.Project = memory.Str("bench")
	switch {
	case i%20 == 7:
		r.Project = memory.Str("other")
	case i%10 == 3:
		r.Scope, r.AgentProfile = "agent", memory.Str(fmt.Sprintf("agent-%d", i%20))
	}
	r.Salience = float64(i%100) / 100
	return r
}

// benchSizes are the dataset sizes of the benchmarks:
// TREE_RING_BENCH_MEMORIES=N runs only N (the growth row: 1000000).
func benchSizes() []int {
	if n, err := strconv.Atoi(os.Getenv("TREE_RING_BENCH_MEMORIES")); err == nil && n > 0 {
		return []int{n}
	}
	return []int{10_000, 30_000, 100_000}
}

// latencies runs fn b.N times and reports p50, p99 and max per operation.
func latencies(b *testing.B, fn func() error) {
	b.Helper()
	var d []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t := time.Now()
		if err := fn(); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(t))
	}
	slices.Sort(d)
	q := func(p float64) float64 {
		return float64(d[min(int(p*float64(len(d))), len(d)-1)].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(float64(d[len(d)-1].Microseconds())/1000, "max-ms")
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	b.ReportMetric(float64(sum.Microseconds())/1000/float64(len(d)), "mean-ms")
}

// BenchmarkRecall measures, in process on an open store, each query in its
// own read transaction: explicit recall of the three published smoke
// queries (project bench, limit 8), the preflight task-hint recall, the
// startup brief and the hint + fill brief (all rendered, all filling the 8
// slots), and open+brief+close as a hook process does it.
func BenchmarkRecall(b *testing.B) {
	for _, n := range benchSizes() {
		root := dataset(b, n)
		st, err := bolt.OpenRoot(root, bolt.Options{ReadOnly: true, Projections: projections.All()})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		scope := recall.Scope{Project: "bench", ProjectAlias: "bench", AgentProfile: "agent-3", WorkflowID: "wf", SessionID: "s"}
		b.Run(fmt.Sprintf("n=%d/explicit", n), func(b *testing.B) {
			queries := []string{"deployment rollback cache", "subsystem 7", "implementation note"}
			i := 0
			latencies(b, func() error {
				q := queries[i%len(queries)]
				i++
				return st.View(func(r *bolt.Reader) error {
					res, err := recall.Recall(ctx, r.Projection(recall.Name), r, q, recall.Filter{Project: "bench"}, benchNow)
					if err == nil && len(res) == 0 {
						err = fmt.Errorf("%q: no results", q)
					}
					return err
				})
			})
		})
		// brief-hint-fill: one hint hit ("note 4242"), seven slots filled
		// from the startup ranking; brief-no-match: a generic prompt that
		// matches nothing, so the whole brief is the fill.
		for _, c := range []struct{ name, hint string }{
			{"brief-task-hint", "fix the deployment rollback cache"}, {"brief-startup", ""},
			{"brief-hint-fill", "flaky test 4242"}, {"brief-no-match", "Please fix the flaky test"},
		} {
			b.Run(fmt.Sprintf("n=%d/%s", n, c.name), func(b *testing.B) {
				latencies(b, func() error {
					return st.View(func(r *bolt.Reader) error {
						out, err := recall.Brief(ctx, r.Projection(recall.Name), r, recall.BriefQuery{Scope: scope, TaskHint: c.hint}, benchNow)
						if err == nil && out.ResultCount != recall.MaxBriefResults {
							err = fmt.Errorf("%s: %d results", c.name, out.ResultCount)
						}
						return err
					})
				})
			})
		}
		// floor: SHA-256 over 300 KiB in one read transaction, CPU only and
		// allocation-free, about as long as a brief: the tail that the
		// machine itself (other processes on the shared cores) adds to an
		// operation of that length in the same run.
		buf := make([]byte, 300<<10)
		b.Run(fmt.Sprintf("n=%d/floor", n), func(b *testing.B) {
			latencies(b, func() error {
				return st.View(func(r *bolt.Reader) error {
					if sha256.Sum256(buf)[0] == 0 && r.Projection(recall.Name).Get([]byte("#next")) == nil {
						return fmt.Errorf("empty index")
					}
					return nil
				})
			})
		})
		st.Close()
		b.Run(fmt.Sprintf("n=%d/open-brief-close", n), func(b *testing.B) {
			latencies(b, func() error {
				st, err := bolt.OpenRoot(root, bolt.Options{ReadOnly: true, Projections: projections.All()})
				if err != nil {
					return err
				}
				defer st.Close()
				return st.View(func(r *bolt.Reader) error {
					_, err := recall.Brief(ctx, r.Projection(recall.Name), r, recall.BriefQuery{Scope: scope}, benchNow)
					return err
				})
			})
		})
	}
}

// BenchmarkRebuildMemories refolds every projection of the recall datasets
// (10k, 30k, 100k memories) with bolt's Rebuild, as `projections rebuild`
// does: the fold of the projections present over a memory ledger. The
// dataset's content is unchanged by a rebuild, so it is done in place.
func BenchmarkRebuildMemories(b *testing.B) {
	for _, n := range benchSizes() {
		root := dataset(b, n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			st, err := bolt.OpenRoot(root, bolt.Options{Projections: projections.All()})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			var head uint64
			start, cpu0 := time.Now(), eventstest.CPUTime()
			for b.Loop() {
				if head, err = st.Rebuild(context.Background(), nil); err != nil {
					b.Fatal(err)
				}
			}
			d := time.Since(start).Seconds() / float64(b.N)
			b.ReportMetric(float64(head)/d, "events/s")
			b.ReportMetric(float64(n)/d, "memories/s")
			b.ReportMetric(float64((eventstest.CPUTime()-cpu0).Nanoseconds())/float64(n*b.N), "cpu-ns/memory")
		})
	}
}
