package main

import (
	"sync"
	"testing"

	"github.com/oklog/ulid/v2"
)

// TestNewIDIncreasesAcrossGoroutines: the process's id source (newID,
// deps.NewID) hands out distinct ids, each goroutine's strictly
// increasing, under -race: the ledger's id index appends ids that arrive
// in order.
func TestNewIDIncreasesAcrossGoroutines(t *testing.T) {
	const workers, each = 4, 2000
	got := make([][]ulid.ULID, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				got[w] = append(got[w], newID())
			}
		}()
	}
	wg.Wait()
	seen := map[ulid.ULID]bool{}
	for w, ids := range got {
		for i, id := range ids {
			if seen[id] {
				t.Fatalf("id %s minted twice", id)
			}
			seen[id] = true
			if i > 0 && id.Compare(ids[i-1]) <= 0 {
				t.Fatalf("goroutine %d: id %d %s not after %s", w, i, id, ids[i-1])
			}
		}
	}
}
