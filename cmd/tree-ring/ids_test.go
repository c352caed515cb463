package main

import (
	"bytes"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

// fixedEntropy hands out the given 10-byte blocks in order and counts the
// bytes asked for.
type fixedEntropy struct {
	blocks [][]byte
	asked  int
}

func (f *fixedEntropy) read(p []byte) (int, error) {
	f.asked += len(p)
	n := copy(p, f.blocks[0])
	f.blocks = f.blocks[1:]
	return n, nil
}

func TestIDSource(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	ones := bytes.Repeat([]byte{0xff}, 10)
	tests := []struct {
		name    string
		clock   []time.Time // one reading per call to now
		blocks  [][]byte
		want    []string // entropy of each id, hex
		wantMS  []time.Time
		wantAsk int
	}{
		{"fresh entropy per millisecond", []time.Time{t0, t0.Add(time.Millisecond)},
			[][]byte{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 1}},
			[]string{"0102030405060708090a", "00000000000000000001"}, []time.Time{t0, t0.Add(time.Millisecond)}, 20},
		{"same millisecond adds one, with carry", []time.Time{t0, t0, t0},
			[][]byte{{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xfe}},
			[]string{"0000000000000000fffe", "0000000000000000ffff", "00000000000000010000"}, []time.Time{t0, t0, t0}, 10},
		{"an exhausted millisecond waits for the next", []time.Time{t0, t0, t0, t0.Add(time.Millisecond)},
			[][]byte{ones, {0, 0, 0, 0, 0, 0, 0, 0, 0, 7}},
			[]string{"ffffffffffffffffffff", "00000000000000000007"}, []time.Time{t0, t0.Add(time.Millisecond)}, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := tt.clock
			e := &fixedEntropy{blocks: tt.blocks}
			s := &idSource{now: func() time.Time { c := clock[0]; clock = clock[1:]; return c }, read: e.read}
			var prev ulid.ULID
			for i, want := range tt.want {
				id := s.New()
				if got := hex.EncodeToString(id[6:]); got != want {
					t.Errorf("id %d entropy = %s, want %s", i, got, want)
				}
				if id.Time() != ulid.Timestamp(tt.wantMS[i]) {
					t.Errorf("id %d time = %d, want %d", i, id.Time(), ulid.Timestamp(tt.wantMS[i]))
				}
				if i > 0 && id.Compare(prev) <= 0 {
					t.Errorf("id %d %s not after %s", i, id, prev)
				}
				prev = id
			}
			if len(clock) != 0 {
				t.Errorf("%d clock readings left", len(clock))
			}
			if e.asked != tt.wantAsk {
				t.Errorf("read %d bytes of entropy, want %d", e.asked, tt.wantAsk)
			}
		})
	}
}

// TestNewIDIncreasesAcrossGoroutines: the process's source hands out
// distinct ids, each goroutine's strictly increasing, under -race.
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
