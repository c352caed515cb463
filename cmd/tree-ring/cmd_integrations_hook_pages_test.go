package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/projections"
)

// ledgerPages snapshots where the project's ledger trees lie.
func (p *hp) ledgerPages() bolt.Pages {
	p.t.Helper()
	st, err := bolt.OpenRoot(filepath.Join(p.dir, ".tree-ring"), bolt.Options{ReadOnly: true})
	if err != nil {
		p.t.Fatal(err)
	}
	defer st.Close()
	pages, err := st.Pages()
	if err != nil {
		p.t.Fatal(err)
	}
	return pages
}

// seed imports n memories and records n receipts (100 codex workers), as
// BenchmarkHookSessionStart's ledger, at the project's clock and ids.
func (p *hp) seed(n int) {
	p.t.Helper()
	f := filepath.Join(p.dir, "memories.jsonl")
	if err := os.WriteFile(f, memoriesJSONL(p.dir, n, hpStart.Add(-48*time.Hour)), 0o600); err != nil {
		p.t.Fatal(err)
	}
	p.ok("", "import", f)
	seedReceiptsAt(p.t, p.dir, n, p.now, p.deps().NewID, projections.All())
}

// formatPages is a page count per bucket, total first ("" is bbolt's root
// bucket).
func formatPages(w map[string]int) string {
	names := make([]string, 0, len(w))
	total := 0
	for k, n := range w {
		names, total = append(names, k), total+n
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "total %d:", total)
	for _, k := range names {
		fmt.Fprintf(&b, " %q %d", k, w[k])
	}
	return b.String()
}

// hookPageBudget is what one SessionStart hook's commit may write per
// bucket on the ledger TestHookPagesPerCommit seeds (3-level trees but
// id_blocks'); docs/benchmarks.md, *SessionStart hook*, has the breakdown.
// A leaf that splits adds a page, and where the splits fall moves with a
// few bytes of the events (durations are measured), so a budget is the
// usual count plus the split its bucket sometimes takes. A bucket not named
// here must not be written at all (a hook folds no memory).
var hookPageBudget = map[string]int{
	"":           1, // bbolt's root bucket (p/harnesses is inline in it)
	"(freelist)": 1,
	// 4 envelopes (~3.5 KB): the last leaf, a new one, 2 branches.
	"events": 5,
	// harness/codex and the new run/<id>: 2 leaves and their branches.
	"heads":         3,
	"stream_blocks": 4,
	// The last id block and its leaf: 32 pairs to a block, five blocks to
	// a page (blocks of 128 made it a 3-4 page overflow leaf).
	"id_blocks": 2,
	// e/ (the worker's newest entry), t/ and u/ (the end): 2 leaves,
	// their branches, a split (5-7 measured; layout 3's random i/ entry
	// made it 3 leaves, 8-10 pages).
	"p/receipts":  7,
	"p/runs":      1,
	"p/harnesses": 1,
}

// hookPageTotal bounds the sum: 20-23 measured (the buckets do not all
// split together).
const hookPageTotal = 23

// A SessionStart hook's one commit writes at most hookPageBudget's pages
// of each bucket: a change that touches more keys, a wider key family or
// blocks that grow into overflow pages fails here, with the breakdown.
func TestHookPagesPerCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 2,000 memories and receipts")
	}
	p := newHP(t, ".codex")
	p.init()
	p.seed(2000)
	for i := range 4 {
		before := p.ledgerPages()
		r := p.hook("codex", p.payload("codex", "session-start.json", func(m map[string]any) { m["session_id"] = fmt.Sprintf("pages-%d", i) }))
		if r.code != 0 {
			t.Fatalf("hook %d: exit %d: %s", i, r.code, r.stderr)
		}
		w := before.Written(p.ledgerPages())
		t.Logf("hook %d: %s", i, formatPages(w))
		sum := 0
		for name, got := range w {
			sum += got
			if got > hookPageBudget[name] {
				t.Errorf("hook %d wrote %d pages of %q, budget %d", i, got, name, hookPageBudget[name])
			}
		}
		if sum > hookPageTotal {
			t.Errorf("hook %d wrote %d pages, budget %d", i, sum, hookPageTotal)
		}
	}
}
