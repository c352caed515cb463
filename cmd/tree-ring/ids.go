package main

import (
	"crypto/rand"
	"sync"

	"github.com/oklog/ulid/v2"
)

// newID is the process's id source (deps.NewID): ULIDs of the wall clock's
// millisecond from ulid's monotonic entropy on crypto/rand, strictly
// increasing within the process. Not ulid.Make: it reads the clock before
// taking its entropy's lock, so one goroutine can get a millisecond's first
// id after a later one of the same millisecond, smaller than its own
// previous id (TestNewIDIncreasesAcrossGoroutines fails on it). Here the
// clock is read under the lock.
var newID = func() func() ulid.ULID {
	var mu sync.Mutex
	entropy := ulid.Monotonic(rand.Reader, 0)
	return func() ulid.ULID {
		mu.Lock()
		defer mu.Unlock()
		return ulid.MustNew(ulid.Now(), entropy)
	}
}()
