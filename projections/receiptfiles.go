package projections

// AllReceipts returns every retained receipt of every harness, in key order
// (harness, worker, recorded_at, receipt id).
func AllReceipts(kv KV) ([]ReceiptEntry, error) { return entries(kv, "e/", -1) }
