package recall_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/tree-ring/tree-ring/projections"
	"github.com/tree-ring/tree-ring/projections/recall"
)

// TestStoreBatchedFoldIsThePerEventFold writes memories through the store
// in transactions of 1, 7 and 400 events, superseding, redacting and
// deleting some in the same transaction as their capture and in later
// ones, so that the recall and duplicates folds run batched (fold.Batcher)
// and read their own held writes. Verify re-folds every event one by one
// into memory and compares every key and value; so does it after a
// Rebuild, whose chunks are batched too, and the recall index's bytes are
// the same before and after the rebuild.
func TestStoreBatchedFoldIsThePerEventFold(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), ".tree-ring")
	st, err := bolt.OpenRoot(root, bolt.Options{Projections: projections.All()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := st.Verify(ctx); err != nil {
			t.Errorf("verify on close: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	}()
	f := &events.Factory{Now: func() time.Time { return benchNow }, NewID: eventstest.IDs(0), Actor: "test"}
	n := 0
	var ids []string
	rng := rand.New(rand.NewPCG(3, 5))
	for _, size := range []int{1, 7, 400, 1, 400, 7, 400} {
		err := st.Update(ctx, func(tx *bolt.Tx) error {
			for j := 0; j < size; j++ {
				r := benchRecord(n, 3000)
				if n%9 == 4 {
					r.Summary = "Implementation note 4 for subsystem 4." // a duplicate summary
				}
				n++
				p, body := r.Split(events.OriginImport, fmt.Sprintf("%032x", n))
				if _, err := tx.PutBody(body); err != nil {
					return err
				}
				if _, err := tx.Append(events.MemoryStream(r.ID), 0, f.Must(events.MemoryStream(r.ID), events.TypeMemoryCaptured, &p)); err != nil {
					return err
				}
				ids = append(ids, r.ID)
				// Now and then act on this memory or on an earlier one,
				// often of an earlier transaction.
				target := ids[rng.IntN(len(ids))]
				if n%4 == 0 {
					target = r.ID
				}
				if err := act(tx, f, target, n%11); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Verify(ctx); err != nil {
		t.Fatalf("after the writes: %v", err)
	}
	before := recallBytes(t, st)
	if _, err := st.Rebuild(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Verify(ctx); err != nil {
		t.Fatalf("after the rebuild: %v", err)
	}
	if after := recallBytes(t, st); !bytes.Equal(before, after) {
		t.Fatal("the rebuilt recall index differs from the one the writes built")
	}
}

// act supersedes (k 1), redacts (k 3) or deletes (k 5) the memory id
// unless it is gone or already left the index; other k do nothing.
func act(tx *bolt.Tx, f *events.Factory, id string, k int) error {
	stream := events.MemoryStream(id)
	kv := tx.Projection(recall.Name)
	if k != 1 && k != 3 && k != 5 {
		return nil
	}
	if recall.BodyDigest(kv, id) == "" {
		return nil
	}
	var e events.Envelope
	switch k {
	case 1:
		e = f.Must(stream, events.TypeMemorySuperseded, &events.MemorySuperseded{MemoryID: id, SupersededBy: "mem_replacement"})
	default:
		d := recall.BodyDigest(kv, id)
		p := events.MemoryForgotten{MemoryID: id, Mode: events.ForgetDelete, ReasonSHA256: d, ReasonChars: 3}
		if k == 3 {
			red := memory.RedactedBody(id)
			sum := sha256.Sum256(red)
			p.Mode, p.RedactedSHA256 = events.ForgetRedact, hex.EncodeToString(sum[:])
			if _, err := tx.PutBody(red); err != nil {
				return err
			}
		}
		e = f.Must(stream, events.TypeMemoryForgotten, &p)
		// As the forget command: the body goes after the fold, which
		// tokenizes it to find the postings.
		if _, err := tx.Append(stream, int64(tx.StreamVersion(stream)), e); err != nil {
			return err
		}
		return tx.DeleteBody(d)
	}
	_, err := tx.Append(stream, int64(tx.StreamVersion(stream)), e)
	return err
}

// recallBytes is every key and value of the recall index, in order.
func recallBytes(t *testing.T, st *bolt.Store) []byte {
	t.Helper()
	var out []byte
	err := st.View(func(r *bolt.Reader) error {
		return r.Projection(recall.Name).ForEach(nil, func(k, v []byte) error {
			out = fmt.Appendf(out, "%x=%x\n", k, v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
