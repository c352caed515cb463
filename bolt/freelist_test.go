package bolt

import (
	"fmt"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events/fold"
	bbolt "go.etcd.io/bbolt"
)

// A short writer opens with bbolt's array freelist, a long operation and a
// migration with the hash map. The file's freelist is the same for both:
// each loads the same free pages, writers of both kinds take turns on one
// ledger, and it verifies on close.
func TestFreelistByWriter(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
		want bbolt.FreelistType
	}{
		{"short writer", Options{}, bbolt.FreelistArrayType},
		{"long operation", Options{SliceBudget: time.Second}, bbolt.FreelistMapType},
		{"migration", Options{Migrate: true}, bbolt.FreelistMapType},
		{"reader", Options{ReadOnly: true}, bbolt.FreelistArrayType},
	} {
		if got := c.opts.freelistType(); got != c.want {
			t.Errorf("%s: freelist %s, want %s", c.name, got, c.want)
		}
	}

	projs := []fold.Projection{testProjection()}
	st, path := openTest(t, Options{Projections: projs})
	if st.db.FreelistType != bbolt.FreelistArrayType {
		t.Fatalf("short writer opened with %s", st.db.FreelistType)
	}
	f := newFactory()
	writes := func(st *Store, from int) {
		t.Helper()
		for i := from; i < from+40; i++ { // one commit each: every commit frees the pages it replaced
			mustAppend(t, st, fmt.Sprintf("run/r%03d", i%7), AnyVersion, f.run(fmt.Sprintf("r%03d", i%7), i))
		}
	}
	loaded := func(opts Options) int {
		t.Helper()
		s, err := Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if want := opts.freelistType(); s.db.FreelistType != want {
			t.Fatalf("freelist %s, want %s", s.db.FreelistType, want)
		}
		return s.db.Stats().FreePageN
	}
	long := Options{Projections: projs, SliceBudget: time.Second}
	writes(st, 0)
	st.Close()
	for i, opts := range []Options{long, {Projections: projs}} {
		a, m := loaded(Options{Projections: projs}), loaded(long)
		if a == 0 || a != m {
			t.Fatalf("round %d: %d free pages loaded by the array, %d by the hash map", i, a, m)
		}
		s, err := Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		writes(s, 100*(i+1))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	st, err := Open(path, Options{Projections: projs})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, st)); n != 120 {
		t.Errorf("%d events after writers of both kinds, want 120", n)
	}
	st.Close()
}
