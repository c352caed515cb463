package main

import (
	"crypto/rand"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// idSource mints the process's event ids: ULIDs of the wall clock's
// millisecond, strictly increasing within the process. The first id of a
// millisecond takes its 80 bits of entropy from crypto/rand (10 bytes: a
// hook mints a handful of ids, and ulid.Make's monotonic reader filled a
// 4 KiB buffer from math/rand for them); a later id of the same
// millisecond is the previous one plus one, as ulid's monotonic entropy
// keeps them ordered. Safe for concurrent use; one per process (newID).
type idSource struct {
	mu   sync.Mutex
	last ulid.ULID
	now  func() time.Time
	read func([]byte) (int, error)
}

// newID is the process's id source (deps.NewID).
var newID = (&idSource{now: time.Now, read: rand.Read}).New

// New returns the next id. It never fails: crypto/rand.Read does not
// return an error on the platforms Go supports (it crashes the program
// instead), and an exhausted millisecond (2^80 ids) waits for the next.
func (s *idSource) New() ulid.ULID {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		ms := ulid.Timestamp(s.now())
		var id ulid.ULID
		_ = id.SetTime(ms) // a wall clock before the year 10889
		if ms == s.last.Time() {
			copy(id[6:], s.last[6:])
			if increment(id[6:]) {
				s.last = id
				return id
			}
			continue // this millisecond's entropy is exhausted
		}
		if _, err := s.read(id[6:]); err != nil {
			panic("crypto/rand: " + err.Error())
		}
		s.last = id
		return id
	}
}

// increment adds one to the big-endian number b; false on overflow.
func increment(b []byte) bool {
	for i := len(b) - 1; i >= 0; i-- {
		b[i]++
		if b[i] != 0 {
			return true
		}
	}
	return false
}
