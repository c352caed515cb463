package recall

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/memory"
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

// postingForm reads how the index holds a token's postings: the docs in
// its count key (nil when it has blocks) and its number of blocks, and the
// docs an eachPosting walk visits.
func postingForm(t *testing.T, kv KV, word string) (inline []uint32, blocks int, walk []uint32) {
	t.Helper()
	tok := tokenHash(word)
	v := kv.Get(key(pCount, u64b(tok)))
	if n := countOf(v); n <= inlineMax {
		var err error
		if inline, err = inlineDocs(nil, v); err != nil {
			t.Fatal(err)
		}
	} else if len(v) != 4 {
		t.Fatalf("%s: count %d in %d bytes", word, n, len(v))
	}
	if err := kv.ForEach(key(pPost, u64b(tok)), func(k, _ []byte) error {
		if len(k) == blockKeyLen {
			blocks++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s := getScratch()
	defer s.release()
	q := &searcher{ctx: context.Background(), kv: kv, s: s}
	if err := q.eachPosting(tok, func(doc uint32) (bool, error) { walk = append(walk, doc); return true, nil }); err != nil {
		t.Fatal(err)
	}
	return inline, blocks, walk
}

// TestPostingFormFollowsTheCount: a token's postings are in its count key
// while it has at most inlineMax, in blocks past that, and back inline
// when removals bring it to inlineMax, whatever the history: the live
// fold, a re-fold that never indexed the deleted memories, and the batch
// with the live fold's bodies (flushed after every event, or never and
// read by queries in between, so blocks it wrote sit in its Overlay when
// the token goes inline again) hold the same bytes, and a walk of the
// postings visits them newest first.
func TestPostingFormFollowsTheCount(t *testing.T) {
	fx := newFixture(t)
	var alpha []memory.Record
	var docs []uint32  // of the live alpha memories, newest first
	every := bodyMap{} // the bodies the live fold had, the deleted ones too
	capture := func() {
		for i := 0; i < blockDocs/2; i++ { // two alpha memories a block apart at most
			fx.capture(mem{project: "proj", summary: fmt.Sprintf("filler %d", fx.n)})
		}
		alpha = append(alpha, fx.capture(mem{project: "proj", summary: "alpha"}))
		docs = append([]uint32{uint32(fx.n - 1)}, docs...)
		maps.Copy(every, fx.bodies)
	}
	drop := func(i int, forget bool) {
		if forget {
			fx.forget(alpha[i].ID, events.ForgetDelete)
		} else {
			fx.supersede(alpha[i].ID, "mem_x")
		}
		docs = slices.DeleteFunc(docs, func(d uint32) bool { return d == uint32(i*(blockDocs/2+1)+blockDocs/2) })
	}
	check := func(when string) {
		t.Helper()
		inline, blocks, walk := postingForm(t, fx.kv, "alpha")
		switch {
		case len(docs) <= inlineMax && (!slices.Equal(inline, docs) || blocks != 0):
			t.Fatalf("%s: %d postings: inline %v, %d blocks; want %v inline", when, len(docs), inline, blocks, docs)
		case len(docs) > inlineMax && (inline != nil || blocks < 2):
			t.Fatalf("%s: %d postings: inline %v, %d blocks; want them in blocks", when, len(docs), inline, blocks)
		case !slices.Equal(walk, docs):
			t.Fatalf("%s: walk %v, want %v", when, walk, docs)
		}
	}
	for range inlineMax {
		capture()
	}
	check("at inlineMax")
	capture()
	check("past inlineMax")
	drop(3, true)
	check("a forget back to inlineMax")
	capture()
	capture()
	check("two past")
	drop(0, false)
	drop(len(alpha)-1, true)
	check("a supersession and a forget back")
	drop(5, true)
	check("below")

	again := newMemKV()
	for i := range fx.log {
		if err := Apply(again, fx.bodies, &fx.log[i]); err != nil {
			t.Fatal(err)
		}
	}
	sameContents(t, "re-fold without the deleted bodies", again, fx.kv)
	for _, flushEvery := range []int{1, 0} {
		got := newMemKV()
		b := Batch(got)
		for i := range fx.log {
			if err := Apply(b, every, &fx.log[i]); err != nil {
				t.Fatal(err)
			}
			switch {
			case flushEvery == 1:
				if err := b.Flush(); err != nil {
					t.Fatal(err)
				}
			case i%5 == 0:
				sameContents(t, fmt.Sprintf("batch before event %d", i+1), b, b) // a read settles the batch into its Overlay
			}
		}
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
		sameContents(t, fmt.Sprintf("batch flushed every %d", flushEvery), got, fx.kv)
	}
}
