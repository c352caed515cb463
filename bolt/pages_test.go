package bolt

import (
	"context"
	"fmt"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"
)

// Pages accounts for every page of the file: the trees' pages, the
// freelist's, the free and pending pages and the two meta pages add up to
// bbolt's high-water mark, no page in two places; and Written is the pages
// a commit copied, only in the buckets it wrote.
func TestPagesCoverTheFile(t *testing.T) {
	st, _ := openTest(t, Options{Projections: nil})
	f := newFactory()
	// Enough streams for branch pages and overflowing values in bodies.
	err := st.Update(context.Background(), func(tx *Tx) error {
		for i := range 400 {
			name := fmt.Sprintf("r%04d", i)
			if _, err := tx.Append("run/"+name, 0, f.run(name, i)); err != nil {
				return err
			}
		}
		_, err := tx.PutBody([]byte(strings.Repeat("a long body ", 1000)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	check := func() Pages {
		t.Helper()
		p, err := st.Pages()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[uint64]string{}
		for name, set := range p {
			for id := range set {
				if other, ok := seen[id]; ok {
					t.Fatalf("page %d in %q and %q", id, other, name)
				}
				seen[id] = name
			}
		}
		var hw int64
		var size int
		_ = st.db.View(func(tx *bbolt.Tx) error {
			hw, size = tx.Size(), tx.DB().Info().PageSize
			return nil
		})
		s := st.db.Stats()
		if got, want := len(seen)+s.FreePageN+s.PendingPageN+2, int(hw)/size; got != want {
			t.Fatalf("%d pages in trees, %d free, %d pending, 2 meta: %d, want the high-water mark's %d", len(seen), s.FreePageN, s.PendingPageN, got, want)
		}
		return p
	}
	before := check()
	if len(before["events"]) < 3 || len(before["bodies"]) < 3 {
		t.Fatalf("events %d pages, bodies %d: the fixture grew no tree", len(before["events"]), len(before["bodies"]))
	}
	mustAppend(t, st, "run/r9999", 0, f.run("r9999", 1))
	w := before.Written(check())
	for _, name := range []string{"events", "heads", "stream_blocks", "id_blocks", "", "(freelist)"} {
		if w[name] == 0 {
			t.Errorf("an append wrote no page of %q: %v", name, w)
		}
	}
	if w["bodies"] != 0 || w["events"] > 3 {
		t.Errorf("an append of one event wrote %v", w)
	}
}
