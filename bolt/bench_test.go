package bolt

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/events/fold"
	bbolt "go.etcd.io/bbolt"
)

// Benchmarks of the ledger, each beside the raw bbolt figure for the same
// work measured in the same run. See docs/benchmarks.md for the method.
//
//	go test -run '^$' -bench . -benchtime 1x ./bolt/
//
// TREE_RING_BENCH_EVENTS overrides the bulk size (default 1,000,000).

func benchEventCount() int {
	if n, err := strconv.Atoi(os.Getenv("TREE_RING_BENCH_EVENTS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

const benchStreams = 1000

// benchEnvelopes returns n small valid run.started events over
// benchStreams streams, with time-ordered ids (as one host mints them).
// They are built without the Factory (whose validation would dominate the
// setup), in the exact form the Factory produces.
func benchEnvelopes(n int) []events.Envelope {
	clock, ids := eventstest.Clock(eventstest.Epoch, time.Millisecond), eventstest.IDs(0)
	out := make([]events.Envelope, n)
	for i := range out {
		at, id := clock(), ids()
		run := strconv.Itoa(i % benchStreams)
		payload, _ := json.Marshal(testRunPayload(run, i))
		out[i] = events.Envelope{
			ID: id, Stream: "run/" + run, Type: events.TypeRunStarted, SchemaVersion: 1,
			RecordedAt: at, Actor: "bench", Payload: payload,
		}
	}
	return out
}

// sealAll returns the stored bytes the ledger would write for envs
// appended to an empty ledger.
func sealAll(envs []events.Envelope) [][]byte {
	out := make([][]byte, len(envs))
	versions := map[string]uint64{}
	prev := events.GenesisHash
	for i, e := range envs {
		versions[e.Stream]++
		e.Version, e.Position = versions[e.Stream], uint64(i+1)
		e.Seal(prev)
		prev = e.Hash
		out[i] = e.Encode()
	}
	return out
}

// clock measures wall time and the process's CPU time (user + system): on
// a shared machine the CPU time per event is the steadier figure.
type clock struct {
	wall time.Time
	cpu  time.Duration
}

func startClock() clock { return clock{time.Now(), eventstest.CPUTime()} }

// report publishes events/s (wall), and wall and CPU nanoseconds per event.
func report(b *testing.B, n int, c clock) {
	d := time.Since(c.wall)
	cpu := eventstest.CPUTime() - c.cpu
	b.ReportMetric(float64(n)/d.Seconds(), "events/s")
	b.ReportMetric(float64(d.Nanoseconds())/float64(n), "ns/event")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/event")
}

// BenchmarkAppendDurable: one event per durable transaction (two
// fdatasyncs), against a raw bbolt Update putting the same bytes.
func BenchmarkAppendDurable(b *testing.B) {
	b.Run("ledger", func(b *testing.B) {
		st, err := OpenRoot(filepath.Join(b.TempDir(), "r"), Options{Projections: []fold.Projection{streamHeads{}}})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		envs := benchEnvelopes(b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := st.Append(bg, envs[i].Stream, AnyVersion, envs[i]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bbolt", func(b *testing.B) {
		db, err := bbolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, &bbolt.Options{FreelistType: bbolt.FreelistMapType})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket(bucketEvents); return err }); err != nil {
			b.Fatal(err)
		}
		raw := sealAll(benchEnvelopes(b.N))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			err := db.Update(func(tx *bbolt.Tx) error {
				bk := tx.Bucket(bucketEvents)
				seq, _ := bk.NextSequence()
				return bk.Put(u64(seq), raw[i])
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkImport: the bulk import of n small events in chunks of
// importChunk (one durable commit each), against raw bbolt puts of the same
// stored bytes in transactions of the same size. The ledger imports those
// bytes as the command reads an export (events.DecodeEnvelopeOwned, before
// the clock starts): sealed envelopes whose hashes were verified, aliasing
// the lines. Both sides run with that same heap (the lines and their
// envelopes live): otherwise the raw side's process frees the envelopes,
// its collector has less to mark and its import reuses their memory while
// the ledger's faults in fresh pages (measured at 100k: raw 1.4-1.7 µs CPU
// per event so, 2.0-2.3 with the envelopes live).
func BenchmarkImport(b *testing.B) {
	n := benchEventCount()
	raw := sealAll(benchEnvelopes(n))
	envs := make([]events.Envelope, n)
	for i := range raw {
		var err error
		if envs[i], err = events.DecodeEnvelopeOwned(raw[i]); err != nil {
			b.Fatal(err)
		}
	}
	defer runtime.KeepAlive(envs)
	b.Run("ledger", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			st, err := OpenRoot(filepath.Join(b.TempDir(), "r"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := startClock()
			res, err := st.Import(bg, envs)
			if err != nil || res.Imported != n {
				b.Fatal(res, err)
			}
			b.StopTimer()
			report(b, n, start)
			st.Close()
		}
	})
	b.Run("bbolt", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			db, err := bbolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, &bbolt.Options{FreelistType: bbolt.FreelistMapType})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := startClock()
			for lo := 0; lo < n; lo += importChunk {
				err := db.Update(func(tx *bbolt.Tx) error {
					bk, err := tx.CreateBucketIfNotExists(bucketEvents)
					if err != nil {
						return err
					}
					bk.FillPercent = 1.0
					for j := lo; j < min(lo+importChunk, n); j++ {
						seq, _ := bk.NextSequence()
						if err := bk.Put(u64(seq), raw[j]); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			report(b, n, start)
			db.Close()
		}
	})
}

// streamHeads is a realistic small projection for the rebuild benchmark:
// every stream's version and last event type, one write per event.
type streamHeads struct{}

func (streamHeads) Name() string        { return "bench_stream_heads" }
func (streamHeads) Version() int        { return 1 }
func (streamHeads) Handles(string) bool { return true }
func (streamHeads) Apply(kv fold.KV, _ fold.Bodies, e *events.Envelope) error {
	var v [64]byte
	val := append(binary.BigEndian.AppendUint64(v[:0], e.Version), e.Type...)
	return kv.Put([]byte(e.Stream), val)
}

var (
	bigOnce sync.Once
	bigPath string
	bigErr  error
)

// bigLedger builds (once per process) a ledger of benchEventCount events
// with the streamHeads projection, for the read benchmarks.
func bigLedger(b *testing.B) string {
	bigOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tree-ring-bench-")
		if err != nil {
			bigErr = err
			return
		}
		benchDirs = append(benchDirs, dir)
		st, err := OpenRoot(filepath.Join(dir, "r"), Options{Projections: []fold.Projection{streamHeads{}}})
		if err != nil {
			bigErr = err
			return
		}
		defer st.Close()
		st.db.NoSync = true // setup only; flushed by Close
		_, bigErr = st.Import(bg, benchEnvelopes(benchEventCount()))
		bigPath = st.Path()
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return bigPath
}

// benchDirs are removed by TestMain after the run.
var benchDirs []string

// BenchmarkScan: a full scan of the ledger, decoded (ReadAll) and as
// stored bytes (ScanRaw), against a bare bbolt cursor over the events
// bucket in one read transaction.
func BenchmarkScan(b *testing.B) {
	path := bigLedger(b)
	n := benchEventCount()
	st, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	warm := func() { _ = st.ScanRaw(bg, 0, func(uint64, []byte) error { return nil }) }
	warm() // page the file in: every variant runs on a warm cache
	b.Run("ledger-decoded", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			start := startClock()
			count := 0
			if err := st.ReadAll(bg, 0, func(e *events.Envelope) error { count++; return nil }); err != nil || count != n {
				b.Fatal(count, err)
			}
			report(b, n, start)
		}
	})
	b.Run("ledger-raw", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			start := startClock()
			count := 0
			if err := st.ScanRaw(bg, 0, func(uint64, []byte) error { count++; return nil }); err != nil || count != n {
				b.Fatal(count, err)
			}
			report(b, n, start)
		}
	})
	b.Run("bbolt", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			start := startClock()
			count, size := 0, 0
			err := st.db.View(func(tx *bbolt.Tx) error {
				c := tx.Bucket(bucketEvents).Cursor()
				for k, v := c.First(); k != nil; k, v = c.Next() {
					count++
					size += len(v)
				}
				return nil
			})
			if err != nil || count != n {
				b.Fatal(count, err)
			}
			report(b, n, start)
		}
	})
}

// BenchmarkRebuild: drop and refold the streamHeads projection over the
// whole ledger, against a bare bbolt cursor scan doing the same puts
// (same keys and values, precomputed) in transactions of the same size.
// "bbolt" never reads a value (a cursor returns slices of the mapped
// file); "bbolt-touch" also reads one byte of each, as any fold must, so
// that the mapped pages of the events are faulted in and cached on its
// side too.
func BenchmarkRebuild(b *testing.B) {
	path := bigLedger(b)
	n := benchEventCount()
	b.Run("ledger", func(b *testing.B) {
		st, err := Open(path, Options{Projections: []fold.Projection{streamHeads{}}})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		for i := 0; i < b.N; i++ {
			start := startClock()
			got, err := st.Rebuild(bg, nil)
			if err != nil || got != uint64(n) {
				b.Fatal(got, err)
			}
			report(b, n, start)
		}
	})
	for _, touch := range []bool{false, true} {
		name := "bbolt"
		if touch {
			name = "bbolt-touch"
		}
		b.Run(name, func(b *testing.B) { rawRebuild(b, path, n, touch) })
	}
}

// rawRebuild is BenchmarkRebuild's baseline: the streamHeads puts,
// precomputed, over a bare cursor; touch reads a byte of every value.
func rawRebuild(b *testing.B, path string, n int, touch bool) {
	envs := benchEnvelopes(n)
	keys := make([][]byte, n)
	vals := make([][]byte, n)
	versions := map[string]uint64{}
	for i, e := range envs {
		versions[e.Stream]++
		keys[i] = []byte(e.Stream)
		vals[i] = append(binary.BigEndian.AppendUint64(nil, versions[e.Stream]), e.Type...)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{FreelistType: bbolt.FreelistMapType})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	name := []byte("bench_raw_fold")
	for i := 0; i < b.N; i++ {
		start := startClock()
		_ = db.Update(func(tx *bbolt.Tx) error { _ = tx.DeleteBucket(name); return nil })
		for lo := 0; lo < n; lo += foldChunk {
			err := db.Update(func(tx *bbolt.Tx) error {
				out, err := tx.CreateBucketIfNotExists(name)
				if err != nil {
					return err
				}
				c := tx.Bucket(bucketEvents).Cursor()
				j := lo
				for k, v := c.Seek(u64(uint64(lo + 1))); k != nil && j < min(lo+foldChunk, n); k, v = c.Next() {
					if touch {
						touched += int(v[len(v)/2])
					}
					if err := out.Put(keys[j], vals[j]); err != nil {
						return err
					}
					j++
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		report(b, n, start)
	}
	_ = db.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket(name) })
}

// touched keeps rawRebuild's reads of the values from being optimized away.
var touched int
