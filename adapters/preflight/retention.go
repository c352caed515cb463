package preflight

import (
	"slices"
	"strings"
	"time"
)

// Retention reasons recorded in receipt.pruned.
const (
	PruneExpired   = "expired"    // recorded 30 days or more before the writer's clock
	PruneOverLimit = "over_limit" // beyond the newest 100 of its harness/worker
)

// Indexed is a receipt as the receipt index knows it.
type Indexed struct {
	HarnessID  string
	Worker     string // worker_key_fingerprint
	ReceiptID  string
	RecordedAt string // receipt format (TimeFormat)
	Path       string // project-relative; "" for receipts recorded without a file
}

// Prune is one retention decision.
type Prune struct {
	Indexed
	Reason string
}

// Retain decides retention when a receipt is about to be recorded at now.
// expired are the index entries (any harness or worker) recorded at or
// before now-30 days; worker are the other entries of the new receipt's
// harness/worker. Every expired entry is pruned; of the worker's remaining
// entries, the new receipt counts first and then the newest by
// (recorded_at, receipt id) descending, up to 100; the rest are over the
// limit. The decision is the writer's (it reads the clock); the receipt
// index fold only applies the resulting receipt.pruned events. The result
// is ordered: expired by (recorded_at, id), then over-limit oldest first.
func Retain(now time.Time, expired, worker []Indexed) []Prune {
	cutoff := now.Add(-RetentionAge)
	var out []Prune
	gone := map[string]bool{}
	for _, e := range expired {
		if at, err := time.Parse(TimeFormat, e.RecordedAt); err == nil && at.After(cutoff) {
			continue // not expired after all: the caller's cut was coarser
		}
		if !gone[e.ReceiptID] {
			gone[e.ReceiptID] = true
			out = append(out, Prune{Indexed: e, Reason: PruneExpired})
		}
	}
	slices.SortFunc(out, func(a, b Prune) int {
		if c := strings.Compare(a.RecordedAt, b.RecordedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ReceiptID, b.ReceiptID)
	})
	var live []Indexed
	for _, e := range worker {
		if !gone[e.ReceiptID] {
			live = append(live, e)
		}
	}
	// Newest first; the incoming receipt takes one of the 100 places.
	slices.SortFunc(live, func(a, b Indexed) int {
		if c := strings.Compare(b.RecordedAt, a.RecordedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ReceiptID, a.ReceiptID)
	})
	if keep := RetentionPerWorker - 1; len(live) > keep {
		over := live[keep:]
		for i := len(over) - 1; i >= 0; i-- {
			out = append(out, Prune{Indexed: over[i], Reason: PruneOverLimit})
		}
	}
	return out
}
