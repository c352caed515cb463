package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/memory"
)

// sizeBenchWords make the 200-byte summaries of the size benchmark: varied
// enough that the recall index holds many distinct tokens, as real notes do.
var sizeBenchWords = strings.Fields(`deploy cache rollback parser token index ledger commit schema migration
hook session worker retry timeout budget queue shard replica cursor bucket page freelist snapshot
config flag release build linker vet lint fuzz golden fixture clock entropy receipt bridge adapter`)

// writeSizeBenchExport writes n memories whose summaries are about 200
// bytes (issue 28's dataset), each with a few rare tokens of its own.
func writeSizeBenchExport(b testing.TB, path string, n int) {
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
	var s strings.Builder
	for i := 0; i < n; i++ {
		s.Reset()
		fmt.Fprintf(&s, "Note %d on subsystem%d:", i, i%97)
		x := uint32(i)*2654435761 + 1 // a fixed pseudo-random word choice per memory
		for j := 0; s.Len() < 190; j++ {
			x = x*1664525 + 1013904223
			s.WriteString(" " + sizeBenchWords[(x>>8)%uint32(len(sizeBenchWords))])
			if j%5 == 4 {
				fmt.Fprintf(&s, " ref%x", (x>>4)%50021)
			}
		}
		s.WriteString(".")
		r := memory.NewRecord(fmt.Sprintf("mem_20260901_000000_%012x", i), s.String(), "lesson", base.Add(time.Duration(i)*time.Second))
		r.Project = memory.Str("bench")
		if err := writeLine(w, &memory.ExportLine{Type: memory.ExportMemoryType, Memory: &r}); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkLedgerSize imports n memories with 200-byte summaries into an
// empty root and reports ledger.db's size against the size of `tree-ring
// export` of the same store (the baseline, issue 28: ≤ 2x), with bbolt's
// per-bucket breakdown in the log (-v). -benchtime=1x; sizes 20k and 100k,
// or TREE_RING_BENCH_MEMORIES=N. TREE_RING_BENCH_COMPACT=1 then runs
// `ledger compact` and reports the compacted ledger too.
func BenchmarkLedgerSize(b *testing.B) {
	sizes := memoryBenchSizes(20_000, 100_000)
	for _, n := range sizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			file := filepath.Join(dir, "in.jsonl")
			writeSizeBenchExport(b, file, n)
			for i := 0; b.Loop(); i++ {
				root := filepath.Join(dir, fmt.Sprintf("r%d", i), ".tree-ring")
				if err := os.MkdirAll(filepath.Dir(root), 0o700); err != nil {
					b.Fatal(err)
				}
				out := filepath.Join(dir, fmt.Sprintf("export%d.jsonl", i))
				for _, args := range [][]string{{"import", file}, {"export", "--output", out}} {
					var errb strings.Builder
					if code := Main(context.Background(), append([]string{"--root", root}, args...), IO{Stdout: io.Discard, Stderr: &errb, Getenv: os.Getenv}); code != 0 {
						b.Fatalf("%s: %d %s", args[0], code, errb.String())
					}
				}
				reportLedgerSpace(b, root, out, "")
				if os.Getenv("TREE_RING_BENCH_COMPACT") != "" {
					var errb strings.Builder
					if code := Main(context.Background(), []string{"--root", root, "ledger", "compact"}, IO{Stdout: io.Discard, Stderr: &errb, Getenv: os.Getenv}); code != 0 {
						b.Fatalf("compact: %d %s", code, errb.String())
					}
					reportLedgerSpace(b, root, out, "compacted-")
				}
			}
		})
	}
}

// reportLedgerSpace reports the ledger's size against the export's, under
// metric names starting with prefix.
func reportLedgerSpace(b *testing.B, root, export, prefix string) {
	fi, err := os.Stat(export)
	if err != nil {
		b.Fatal(err)
	}
	st, err := bolt.OpenRoot(root, bolt.Options{MustExist: true}) // a write open: only it loads the freelist
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	sp, err := st.Space()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(sp.FileBytes)/float64(fi.Size()), prefix+"ledger/export")
	b.ReportMetric(float64(sp.FileBytes)/(1<<20), prefix+"ledger-MiB")
	b.ReportMetric(float64(fi.Size())/(1<<20), "export-MiB")
	b.Logf("%sledger %d B (pages %d B, reserve %d B), export %d B, free pages %d (%d B)", prefix, sp.FileBytes, sp.UsedBytes, sp.FileBytes-sp.UsedBytes, fi.Size(), sp.FreePages, int64(sp.FreePages*sp.PageSize))
	for _, bk := range sp.Buckets {
		b.Logf("%-28s keys %9d  in use %11d B  pages %11d B  fill %3.0f%%  depth %d", bk.Name, bk.Keys, bk.Inuse, bk.Alloc, 100*float64(bk.Inuse)/float64(max(bk.Alloc, 1)), bk.Depth)
	}
}
