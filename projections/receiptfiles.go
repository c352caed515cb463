package projections

import "github.com/tree-ring/tree-ring/events/receipt"

// AllReceipts returns every retained receipt of every harness, in key order
// (harness, worker, recorded_at, receipt id).
func AllReceipts(kv KV) ([]receipt.Entry, error) { return entries(kv, "e/", -1) }
