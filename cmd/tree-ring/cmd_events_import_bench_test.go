package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/projections"
)

var bg = context.Background()

// BenchmarkEventsImport measures `tree-ring events import` on an NDJSON
// export of TREE_RING_BENCH_EVENTS (default 1,000,000) small events over
// 1,000 streams: "decode" is the strict parallel decoding alone, "command"
// the whole command in process (decode, open, import, close), "store" the
// import of the decoded envelopes alone.
//
//	go test -run '^$' -bench EventsImport -benchtime 1x ./cmd/tree-ring/
func BenchmarkEventsImport(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("TREE_RING_BENCH_EVENTS")); err == nil && v > 0 {
		n = v
	}
	file := filepath.Join(b.TempDir(), "export.ndjson")
	writeBenchExport(b, file, n)
	b.Run("decode", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			f, err := os.Open(file)
			if err != nil {
				b.Fatal(err)
			}
			start, cpu := time.Now(), eventstest.CPUTime()
			envs, _, err := readEnvelopes(f, file, maxImportBytes)
			if err != nil || len(envs) != n {
				b.Fatal(len(envs), err)
			}
			reportRate(b, n, start, cpu)
			f.Close()
		}
	})
	// "store" is bolt.Import of the decoded envelopes into a store opened
	// as the command opens it (every projection, slices): the part of the
	// command after decoding, for the command's ratio to bolt.Import.
	b.Run("store", func(b *testing.B) {
		f, err := os.Open(file)
		if err != nil {
			b.Fatal(err)
		}
		envs, _, err := readEnvelopes(f, file, maxImportBytes)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < b.N; i++ {
			root := filepath.Join(b.TempDir(), ".tree-ring")
			start, cpu := time.Now(), eventstest.CPUTime()
			st, err := bolt.OpenRoot(root, bolt.Options{Projections: projections.All(), SliceBudget: sliceBudget})
			if err != nil {
				b.Fatal(err)
			}
			if res, err := st.Import(bg, envs); err != nil || res.Imported != n {
				b.Fatal(res, err)
			}
			if err := st.Close(); err != nil {
				b.Fatal(err)
			}
			reportRate(b, n, start, cpu)
		}
	})
	b.Run("command", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			root := filepath.Join(b.TempDir(), ".tree-ring")
			start, cpu := time.Now(), eventstest.CPUTime()
			r := invocation{ctx: bg, deps: testDeps()}.run("--root", root, "events", "import", file)
			if r.code != 0 || !strings.HasPrefix(r.stdout, "imported "+strconv.Itoa(n)) {
				b.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
			}
			reportRate(b, n, start, cpu)
		}
	})
}

func reportRate(b *testing.B, n int, start time.Time, cpu time.Duration) {
	d := time.Since(start)
	b.ReportMetric(float64(n)/d.Seconds(), "events/s")
	b.ReportMetric(float64((eventstest.CPUTime()-cpu).Nanoseconds())/float64(n), "cpu-ns/event")
}

// writeBenchExport writes n sealed, chained envelopes as one host's export.
func writeBenchExport(b testing.TB, path string, n int) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	versions := map[string]uint64{}
	prev := events.GenesisHash
	for i := range n {
		at := base.Add(time.Duration(i) * time.Millisecond)
		var id ulid.ULID
		_ = id.SetTime(ulid.Timestamp(at))
		binary.BigEndian.PutUint64(id[8:], uint64(i))
		var rid ulid.ULID
		binary.BigEndian.PutUint64(rid[8:], uint64(i%1000)+1)
		payload, _ := json.Marshal(&events.RunStarted{
			RunID: rid.String(), ScopeKey: "0123456789abcdef01234567", Command: events.RunCmdEventsImport,
			Stage: "start", PID: i + 1, StartedAt: "2026-11-01T12:00:00.000Z",
		})
		// Each of the 1,000 streams is one run's own stream (the runs
		// projection requires it); repeated run.started of a live run fold
		// as no-ops.
		e := events.Envelope{ID: id, Stream: events.RunStream(rid.String()), Type: events.TypeRunStarted, SchemaVersion: 1, RecordedAt: at, Actor: "bench", Payload: payload}
		versions[e.Stream]++
		e.Version, e.Position = versions[e.Stream], uint64(i+1)
		e.Seal(prev)
		prev = e.Hash
		w.Write(e.Encode())
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
}
