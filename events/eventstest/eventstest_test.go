package eventstest

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

func TestClockAdvances(t *testing.T) {
	c := Clock(Epoch, time.Second)
	a, b := c(), c()
	if !a.Equal(Epoch.Add(time.Second)) || !b.Equal(Epoch.Add(2*time.Second)) {
		t.Fatalf("got %v, %v", a, b)
	}
}

func TestIDsIncreaseAndMarkersSeparate(t *testing.T) {
	a, b := IDs(0), IDs(7)
	x, y := a(), a()
	if x.Compare(y) >= 0 {
		t.Fatalf("ids do not increase: %s %s", x, y)
	}
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		for _, id := range []string{a().String(), b().String()} {
			if seen[id] {
				t.Fatalf("duplicate id %s", id)
			}
			seen[id] = true
		}
	}
}

func TestIDsAtKeepsTheLayout(t *testing.T) {
	at := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	id := IDsAt(at, 0xAA000000)()
	if id.Time() != ulid.Timestamp(at) || id[6] != 0xAA || id[15] != 1 || id[10] != 0 {
		t.Fatalf("%v % x", id, id[:])
	}
	if IDs(7)() == IDsAt(at, 7)() {
		t.Fatal("the timestamp does not separate sources")
	}
}

func TestEntropyIsReproducibleAndDistinct(t *testing.T) {
	read := func(r io.Reader, n int) []byte {
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := Entropy(1), Entropy(1)
	x1, x2 := read(a, 16), read(a, 16)
	if bytes.Equal(x1, x2) {
		t.Fatal("consecutive blocks repeat")
	}
	// Odd read sizes see the same stream.
	y := append(read(b, 5), read(b, 27)...)
	if !bytes.Equal(y, append(x1, x2...)) {
		t.Fatalf("stream depends on read sizes:\n% x\n% x", y, append(x1, x2...))
	}
	if bytes.Equal(read(Entropy(2), 16), x1) {
		t.Fatal("markers do not separate streams")
	}
}
