package recall

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/tree-ring/tree-ring/events"
)

// TestBatchFoldSameBytes folds the golden workload (1,500 memories,
// supersessions, deletions and redactions) and the deleted-bodies workload
// one event at a time into a plain KV, and through Batch flushed every
// n events, and requires the same keys and values byte for byte. Between
// flushes, what the batch reads (Get and ForEach, as a query inside the
// transaction would) is the per-event fold's state at that point.
func TestBatchFoldSameBytes(t *testing.T) {
	fx := newFixture(t)
	goldenWorkload(fx)
	invisible(fx)
	for i := 0; i < 150; i++ {
		r := fx.capture(mem{project: "proj", summary: fmt.Sprintf("deploy later %d", i)})
		switch i % 5 {
		case 1:
			fx.forget(r.ID, events.ForgetDelete)
		case 3:
			fx.forget(r.ID, events.ForgetRedact)
			fx.forget(r.ID, events.ForgetDelete)
		case 4:
			fx.supersede(r.ID, "mem_x")
		}
	}
	want := newMemKV()
	for i := range fx.log {
		if err := Apply(want, fx.bodies, &fx.log[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, every := range []int{1, 3, 64, 500, len(fx.log)} {
		t.Run(fmt.Sprintf("flush every %d", every), func(t *testing.T) {
			got, ref := newMemKV(), newMemKV()
			b := Batch(got)
			for i := range fx.log {
				for _, kv := range []KV{b, ref} {
					if err := Apply(kv, fx.bodies, &fx.log[i]); err != nil {
						t.Fatal(err)
					}
				}
				if every == 64 && i%97 == 0 {
					sameContents(t, fmt.Sprintf("before the flush, event %d", i), b, ref)
				}
				if i%every == every-1 {
					if err := b.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := b.Flush(); err != nil {
				t.Fatal(err)
			}
			sameContents(t, "flushed", got, want)
		})
	}
}

// sameContents requires got and want to hold the same keys and values, read
// by ForEach and by Get.
func sameContents(t *testing.T, when string, got, want KV) {
	t.Helper()
	all := func(kv KV) (keys []string, vals [][]byte) {
		err := kv.ForEach(nil, func(k, v []byte) error {
			keys, vals = append(keys, string(k)), append(vals, bytes.Clone(v))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return keys, vals
	}
	gk, gv := all(got)
	wk, wv := all(want)
	if len(gk) != len(wk) {
		t.Fatalf("%s: %d keys, want %d", when, len(gk), len(wk))
	}
	for i := range wk {
		if gk[i] != wk[i] || !bytes.Equal(gv[i], wv[i]) {
			t.Fatalf("%s: key %d is %x=%x, want %x=%x", when, i, gk[i], gv[i], wk[i], wv[i])
		}
		if g := got.Get([]byte(wk[i])); !bytes.Equal(g, wv[i]) {
			t.Fatalf("%s: Get(%x) = %x, want %x", when, wk[i], g, wv[i])
		}
	}
}
