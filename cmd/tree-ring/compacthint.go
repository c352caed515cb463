package main

import (
	"fmt"

	"github.com/tree-ring/tree-ring/bolt"
)

// compactHintAt is when an import suggests `tree-ring ledger compact`: at
// least 4 MiB of free pages, and at least a tenth of the pages in use.
// Less than 4 MiB is not worth a user's attention, nor a compaction during
// which the hooks wait; the share keeps a large ledger, whose copy holds
// the lock for seconds (docs/ledger.md), from being sent to compact for a
// small gain. The free pages are the part of the gain known without a walk
// of every page: the same compaction repacks the half-empty pages an
// import leaves. Measured with issue 28's dataset (200-byte summaries):
// 20,000 memories leave 6.8 MiB free of 47 MiB in use (suggested; compact
// takes the file from 68.6 to 31.0 MiB), 2,000 leave 1.6 MiB (not). A
// variable so that a test can lower it.
var compactHintAt = bolt.CompactThreshold{MinFreeBytes: 4 << 20, MinFreeShare: 0.1}

// ledgerSpace is the ledger's size after an import that wrote, in the
// import's JSON result.
type ledgerSpace struct {
	LedgerBytes      int64 `json:"ledger_bytes"`
	FreeBytes        int64 `json:"free_bytes"`
	CompactSuggested bool  `json:"compact_suggested"`
}

// spaceAfterImport reads st's size cheaply (bolt.Store.FileSpace); nil
// when it cannot: the hint is advice, and never fails an import.
func spaceAfterImport(st *bolt.Store) *ledgerSpace {
	sp, err := st.FileSpace()
	if err != nil {
		return nil
	}
	return &ledgerSpace{LedgerBytes: sp.FileBytes, FreeBytes: sp.FreeBytes(), CompactSuggested: sp.CompactWorthwhile(compactHintAt)}
}

// printCompactHint writes, in text mode, one line to stderr when sp
// suggests a compaction. It names the file, never its path.
func printCompactHint(g *Globals, sp *ledgerSpace) {
	if g.JSON || sp == nil || !sp.CompactSuggested {
		return
	}
	fmt.Fprintf(g.Stderr, "tree-ring: %s is %s, %s of it free pages; `tree-ring ledger compact` gives them back and repacks half-empty pages (hooks wait while it runs)\n",
		bolt.LedgerFile, mib(sp.LedgerBytes), mib(sp.FreeBytes))
}

// mib formats n bytes as MiB with one decimal.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
