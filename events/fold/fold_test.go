package fold

import (
	"fmt"
	"strings"
	"testing"
)

// recordingKV is a MemKV that records the writes it receives, in order.
type recordingKV struct {
	*MemKV
	writes []string
}

func (k *recordingKV) Put(key, v []byte) error {
	k.writes = append(k.writes, "put "+string(key)+"="+string(v))
	return k.MemKV.Put(key, v)
}

func (k *recordingKV) Delete(key []byte) error {
	k.writes = append(k.writes, "del "+string(key))
	return k.MemKV.Delete(key)
}

func dump(t *testing.T, kv KV, prefix string) string {
	t.Helper()
	var b strings.Builder
	if err := kv.ForEach([]byte(prefix), func(k, v []byte) error {
		fmt.Fprintf(&b, "%s=%s ", k, v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestOverlayReadsItsWritesAndFlushesEachKeyOnceInOrder: an Overlay reads
// as the KV would after the same writes, and its flush writes every
// touched key once, in key order, leaving the KV as the writes one by one
// would.
func TestOverlayReadsItsWritesAndFlushesEachKeyOnceInOrder(t *testing.T) {
	base := &recordingKV{MemKV: NewMemKV()}
	direct := NewMemKV()
	for _, kv := range []KV{base, direct} {
		for _, k := range []string{"a1", "a3", "a5", "b1"} {
			if err := kv.Put([]byte(k), []byte("old")); err != nil {
				t.Fatal(err)
			}
		}
	}
	base.writes = nil
	o := NewOverlay(base)
	ops := []struct{ op, key, val string }{
		{"put", "a4", "x"}, {"put", "a3", "new"}, {"del", "a5", ""}, {"put", "a0", "y"},
		{"put", "a4", "longer value"}, {"put", "a4", "z"}, {"del", "a0", ""}, {"put", "a6", "w"},
		{"del", "a9", ""}, {"del", "b1", ""}, {"put", "b1", "back"},
	}
	for i, op := range ops {
		for _, kv := range []KV{o, direct} {
			var err error
			if op.op == "put" {
				err = kv.Put([]byte(op.key), []byte(op.val))
			} else {
				err = kv.Delete([]byte(op.key))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range []string{"", "a", "a4", "b"} {
			if got, want := dump(t, o, p), dump(t, direct, p); got != want {
				t.Fatalf("after op %d, prefix %q: overlay reads %s, want %s", i, p, got, want)
			}
		}
		for _, k := range []string{"a0", "a3", "a4", "a5", "a9", "b1"} {
			if got, want := string(o.Get([]byte(k))), string(direct.Get([]byte(k))); got != want {
				t.Fatalf("after op %d: Get(%s) = %q, want %q", i, k, got, want)
			}
		}
	}
	if len(base.writes) != 0 {
		t.Fatalf("wrote before the flush: %v", base.writes)
	}
	if err := o.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "del a0|put a3=new|put a4=z|del a5|put a6=w|del a9|put b1=back"
	if got := strings.Join(base.writes, "|"); got != want {
		t.Fatalf("flush wrote %s, want %s", got, want)
	}
	if got, want := dump(t, base, ""), dump(t, direct, ""); got != want {
		t.Fatalf("after the flush %s, want %s", got, want)
	}
	base.writes = nil
	if err := o.Flush(); err != nil || len(base.writes) != 0 {
		t.Fatalf("a second flush wrote %v (%v)", base.writes, err)
	}
}

// discardKV accepts every write and holds nothing.
type discardKV struct{}

func (discardKV) Get([]byte) []byte                             { return nil }
func (discardKV) Put(_, _ []byte) error                         { return nil }
func (discardKV) Delete([]byte) error                           { return nil }
func (discardKV) ForEach([]byte, func(k, v []byte) error) error { return nil }

// BenchmarkOverlay is a rebuild chunk's pattern: 20,000 keys in random
// order (digests, token blocks), a third of them written three times, then
// the flush; twice, as a batch that stays usable.
func BenchmarkOverlay(b *testing.B) {
	keys := make([][]byte, 20_000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "k%08x", uint32(i)*2654435761)
	}
	val := make([]byte, 40)
	for b.Loop() {
		o := NewOverlay(discardKV{})
		for range 2 {
			for i, k := range keys {
				for range 1 + 2*(i%3/2) {
					_ = o.Get(k)
					_ = o.Put(k, val)
				}
			}
			if err := o.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
