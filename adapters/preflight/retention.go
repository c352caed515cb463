package preflight

import (
	"path"
	"slices"
	"strings"
	"time"

	"github.com/tree-ring/tree-ring/events/receipt"
)

// Retention reasons recorded in receipt.pruned.
const (
	PruneExpired   = "expired"    // recorded 30 days or more before the writer's clock
	PruneOverLimit = "over_limit" // beyond the newest 100 of its harness/worker
)

// Prune is one retention decision.
type Prune struct {
	receipt.Entry
	Reason string
}

// Retain decides retention when a receipt is about to be recorded at now.
// expired are the index entries (any harness or worker) recorded at or
// before now-30 days. beyond are the oldest entries of the new receipt's
// harness/worker that do not fit with it in the newest 100: when the
// worker holds n receipts, its n-99 oldest by (recorded_at, receipt id)
// (the published order keeps the newest 100 by recorded_at, then path,
// descending). Every expired entry is pruned as expired, every other
// entry of beyond as over the limit; expired entries are the oldest, so
// they are the first of beyond. The decision is the writer's (it reads the
// clock); the receipt index fold only applies the resulting receipt.pruned
// events. The result is ordered: expired by (recorded_at, id), then over
// the limit oldest first.
func Retain(now time.Time, expired, beyond []receipt.Entry) []Prune {
	cutoff := now.Add(-RetentionAge)
	var out []Prune
	gone := map[string]bool{}
	for _, e := range expired {
		if at, err := time.Parse(receipt.TimeFormat, e.RecordedAt); err == nil && at.After(cutoff) {
			continue // not expired after all: the caller's cut was coarser
		}
		if !gone[e.ReceiptID] {
			gone[e.ReceiptID] = true
			out = append(out, Prune{Entry: e, Reason: PruneExpired})
		}
	}
	slices.SortFunc(out, func(a, b Prune) int {
		if c := strings.Compare(a.RecordedAt, b.RecordedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ReceiptID, b.ReceiptID)
	})
	over := slices.Clone(beyond)
	slices.SortFunc(over, func(a, b receipt.Entry) int {
		if c := strings.Compare(a.RecordedAt, b.RecordedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ReceiptID, b.ReceiptID)
	})
	for _, e := range over {
		if !gone[e.ReceiptID] {
			gone[e.ReceiptID] = true
			out = append(out, Prune{Entry: e, Reason: PruneOverLimit})
		}
	}
	return out
}

// Beyond is how many of a worker's n retained receipts must make room for
// a new one: n-99, or none.
func Beyond(n int) int { return max(0, n-(RetentionPerWorker-1)) }

// EmptiedDirs are the worker directories that retention removes once the
// plan's files are gone, if they are then empty (the caller removes only
// an empty one): the directory of each removed receipt file other than
// keep, the directory the new receipt was written to, each once, sorted.
// A subagent's worker identity is new on every spawn, so each spawn has
// its own directory; without this, every spawn would leave one behind
// after its receipts expire.
func EmptiedDirs(removed []string, keep string) []string {
	var out []string
	for _, f := range removed {
		d := path.Dir(f)
		if d != keep && strings.HasPrefix(d, receipt.Dir+"/") && strings.Count(d[len(receipt.Dir):], "/") == 2 {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
