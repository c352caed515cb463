package runrec

import (
	"os"
	"syscall"
	"testing"
)

// Only ESRCH means dead: EPERM (another user's live process) and unknown
// errors keep a run running. A pid equal to ours is alive only for the
// runs this recorder started.
func TestProcessAliveClassification(t *testing.T) {
	rc := &Recorder{}
	for _, c := range []struct {
		err   error
		alive bool
	}{{nil, true}, {syscall.EPERM, true}, {syscall.EINVAL, true}, {syscall.ESRCH, false}} {
		rc.Kill = func(int, syscall.Signal) error { return c.err }
		if got := rc.Alive("01M6A6FT000000000000000001", 4242); got != c.alive {
			t.Errorf("kill error %v: alive %v, want %v", c.err, got, c.alive)
		}
	}
	if rc.Alive("01M6A6FT000000000000000001", 0) {
		t.Error("pid 0 is alive")
	}
	rc.Kill = func(int, syscall.Signal) error { t.Fatal("own pid probed with kill"); return nil }
	rc.own.Store("01M6A6FT000000000000000002", struct{}{})
	if !rc.Alive("01M6A6FT000000000000000002", os.Getpid()) || rc.Alive("01M6A6FT000000000000000003", os.Getpid()) {
		t.Fatal("own pid: alive only for this recorder's own runs")
	}
	other := &Recorder{}
	if other.Alive("01M6A6FT000000000000000002", os.Getpid()) {
		t.Fatal("another recorder's run with our pid is ours")
	}
}

func TestMeterCountsCharacters(t *testing.T) {
	sum, n := InputDigest([]byte("é-a\xff"))
	if n != 4 || len(sum) != 64 {
		t.Fatalf("%s %d", sum, n)
	}
	m := NewMeter()
	_, _ = m.Write([]byte("é-"))
	_, _ = m.Write([]byte("a\xff"))
	if s2, n2 := m.Digest(); s2 != sum || n2 != n {
		t.Fatalf("streamed %s %d, whole %s %d", s2, n2, sum, n)
	}
	// Every byte value at every offset of the eight-byte words.
	var all []byte
	for i := range 256 * 3 {
		all = append(all, byte(i*7))
	}
	for lo := range 9 {
		want := 0
		for _, c := range all[lo:] {
			if c&0xC0 == 0x80 {
				want++
			}
		}
		if got := continuationBytes(all[lo:]); got != want {
			t.Fatalf("from %d: %d continuation bytes, want %d", lo, got, want)
		}
	}
}
