package eventstest

import (
	"testing"
	"time"
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
