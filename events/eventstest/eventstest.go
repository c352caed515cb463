// Package eventstest is the one fixed clock and deterministic id source that
// every package's tests use, so events, receipts and hook outputs are
// byte-for-byte reproducible and golden files can be compared.
//
// Everything here is safe for concurrent use. Nothing here is used by
// non-test code.
package eventstest

import (
	"encoding/binary"
	"io"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/tree-ring/tree-ring/events"
)

// Epoch is the instant every test clock starts from unless told otherwise.
var Epoch = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// idEpoch is the timestamp part of every test ULID; fixed so that ids do not
// depend on the clock a test chooses.
var idEpoch = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// Clock returns a clock that starts at start and advances step on every
// call, so consecutive events get distinct, increasing instants.
func Clock(start time.Time, step time.Duration) func() time.Time {
	var mu sync.Mutex
	t := start
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(step)
		return t
	}
}

// IDs returns a source of sequential ULIDs. The marker occupies bytes 6..9
// of every id, so two sources with different markers never collide (a
// fixture's ids and a command's, say); within a source ids increase.
func IDs(marker uint32) func() ulid.ULID { return IDsAt(idEpoch, marker) }

// IDsAt is IDs with the ids' timestamp part at instead of the fixed
// epoch, for a sequence of ids that must sort after another's.
func IDsAt(at time.Time, marker uint32) func() ulid.ULID {
	var mu sync.Mutex
	var n uint64
	return func() ulid.ULID {
		mu.Lock()
		defer mu.Unlock()
		n++
		var id ulid.ULID
		_ = id.SetTime(ulid.Timestamp(at))
		binary.BigEndian.PutUint64(id[8:], n) // bytes 10..15: the counter
		binary.BigEndian.PutUint32(id[6:10], marker)
		return id
	}
}

// Entropy returns a deterministic stand-in for crypto/rand: 16-byte blocks
// of the marker, a block counter and a fixed tail, so the random ids minted
// from it (receipt ids, UUID v4) are reproducible and distinct per marker
// and per block.
func Entropy(marker uint32) io.Reader { return &entropy{marker: marker} }

type entropy struct {
	mu     sync.Mutex
	marker uint32
	off    uint64 // bytes produced so far
}

func (e *entropy) Read(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var block [16]byte
	for i := range p {
		k, j := e.off/16, e.off%16
		if j == 0 || i == 0 {
			binary.BigEndian.PutUint32(block[0:4], e.marker)
			binary.BigEndian.PutUint64(block[4:12], k+1)
			copy(block[12:], "tr00")
		}
		p[i] = block[j]
		e.off++
	}
	return len(p), nil
}

// Factory returns an events.Factory on Clock(Epoch, time.Second) and
// IDs(0) with the given actor.
func Factory(actor string) *events.Factory {
	return &events.Factory{Now: Clock(Epoch, time.Second), NewID: IDs(0), Actor: actor}
}
