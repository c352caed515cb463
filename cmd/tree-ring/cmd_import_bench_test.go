package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/events/memory"
)

// writeMemoryBenchExport writes n memories in the published export format: the
// performance_smoke dataset (project bench; every 50th a scar warning).
func writeMemoryBenchExport(b *testing.B, path string, n int) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	base := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	h := memory.ExportHeader{Type: memory.ExportHeaderType, SchemaVersion: 1, PluginVersion: "0.15.6", CreatedAt: events.FormatMemoryTime(base), MemoryCount: n}
	if err := writeLine(w, &h); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		r := memory.NewRecord(fmt.Sprintf("mem_20260901_000000_%012x", i), fmt.Sprintf("Implementation note %d for subsystem %d.", i, i%17), "lesson", base.Add(time.Duration(i)*time.Second))
		if i%50 == 0 {
			r.Summary, r.EventType, r.Ring, r.Tags = fmt.Sprintf("Avoid stale deployment rollback cache failure %d.", i), "warning", "scar", []string{"deployment", "cache"}
		}
		r.Project = memory.Str("bench")
		if err := writeLine(w, &memory.ExportLine{Type: memory.ExportMemoryType, Memory: &r}); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkImport measures `tree-ring import` of a published export into an
// empty root, whole command in process: decode, validate, sensitivity
// guard, bodies, events, the inline recall index, fsync per 5,000.
// Run with -benchtime=1x; it reports memories/s and the process's CPU
// time (user + system) per memory, the steadier figure on a shared machine.
// TREE_RING_BENCH_MEMORIES=N runs only N memories (the growth row: 1000000).
func BenchmarkImport(b *testing.B) {
	sizes := memoryBenchSizes(10_000, 100_000)
	for _, n := range sizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			file := filepath.Join(dir, "export.jsonl")
			writeMemoryBenchExport(b, file, n)
			var total, cpu time.Duration
			for i := 0; b.Loop(); i++ {
				root := filepath.Join(dir, fmt.Sprintf("r%d", i), ".tree-ring")
				if err := os.MkdirAll(filepath.Dir(root), 0o700); err != nil {
					b.Fatal(err)
				}
				var errb strings.Builder
				start, cpu0 := time.Now(), eventstest.CPUTime()
				code := Main(context.Background(), []string{"--root", root, "import", file}, IO{Stdout: io.Discard, Stderr: &errb, Getenv: os.Getenv})
				total += time.Since(start)
				cpu += eventstest.CPUTime() - cpu0
				if code != 0 {
					b.Fatalf("import: %d %s", code, errb.String())
				}
			}
			b.ReportMetric(float64(n*b.N)/total.Seconds(), "memories/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(n*b.N), "cpu-ns/memory")
		})
	}
}

// BenchmarkImportRead measures the import's read alone (readMemories: the
// lines parsed, validated and guarded on parseWorkers goroutines, taken in
// order): memories/s and the process's CPU time per memory; CPU above wall
// is the second core's share. TREE_RING_BENCH_MEMORIES as for
// BenchmarkImport.
func BenchmarkImportRead(b *testing.B) {
	sizes := memoryBenchSizes(10_000, 100_000)
	for _, n := range sizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			file := filepath.Join(b.TempDir(), "export.jsonl")
			writeMemoryBenchExport(b, file, n)
			var total, cpu time.Duration
			for b.Loop() {
				f, err := os.Open(file)
				if err != nil {
					b.Fatal(err)
				}
				start, cpu0 := time.Now(), eventstest.CPUTime()
				recs, refused, err := readMemories(context.Background(), f, "export.jsonl", "2026-11-01T12:00:00.000000Z")
				total += time.Since(start)
				cpu += eventstest.CPUTime() - cpu0
				f.Close()
				if err != nil || len(recs) != n || len(refused) != 0 {
					b.Fatalf("read: %v, %d records, %d refused", err, len(recs), len(refused))
				}
			}
			b.ReportMetric(float64(n*b.N)/total.Seconds(), "memories/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(n*b.N), "cpu-ns/memory")
		})
	}
}

// memoryBenchSizes is the memory counts a benchmark runs: TREE_RING_BENCH_MEMORIES
// alone when set (the growth row: 1000000), else defaults.
func memoryBenchSizes(defaults ...int) []int {
	if n, err := strconv.Atoi(os.Getenv("TREE_RING_BENCH_MEMORIES")); err == nil && n > 0 {
		return []int{n}
	}
	return defaults
}
