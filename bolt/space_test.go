package bolt

import (
	"fmt"
	"testing"
)

func TestCompactWorthwhile(t *testing.T) {
	at := CompactThreshold{MinFreeBytes: 4 << 20, MinFreeShare: 0.1}
	const page = 4096
	space := func(used, free int64) Space {
		return Space{FileBytes: used + 16<<20, PageSize: page, UsedBytes: used, FreePages: int(free / page)}
	}
	for _, c := range []struct {
		name string
		sp   Space
		at   CompactThreshold
		want bool
	}{
		{"no free pages", space(100<<20, 0), at, false},
		{"no free pages, zero threshold", space(100<<20, 0), CompactThreshold{}, false},
		{"one page, zero threshold", space(1<<20, page), CompactThreshold{}, true},
		{"below the bytes floor, a large share", space(6<<20, 3<<20), at, false},
		{"at both", space(44<<20, 4<<20), at, true}, // 4 MiB of 40 in use
		{"the floor, a share just under", space(44<<20+page, 4<<20), at, false},
		{"a share, under the floor by a page", space(20<<20, 4<<20-page), at, false},
		{"issue 28's 20k import", Space{FileBytes: 71901184, PageSize: page, UsedBytes: 56352768, FreePages: 7163904 / page}, at, true},
		{"a large ledger, a small share", space(1<<30, 64<<20), at, false},
		{"a read-only open (no freelist)", Space{FileBytes: 1 << 30, PageSize: page, UsedBytes: 1 << 29}, at, false},
	} {
		if got := c.sp.CompactWorthwhile(c.at); got != c.want {
			t.Errorf("%s: %v (free %d of %d used), want %v", c.name, got, c.sp.FreeBytes(), c.sp.UsedBytes, c.want)
		}
	}
}

// TestFileSpaceIsSpaceWithoutBuckets: the cheap report counts the free
// pages a write left, as the walking one does.
func TestFileSpaceIsSpaceWithoutBuckets(t *testing.T) {
	st, _ := openTest(t, Options{})
	var digests []string
	if err := st.Update(bg, func(tx *Tx) error {
		for i := range 2000 {
			d, err := tx.PutBody(fmt.Appendf(nil, "body %d with some text to take room", i))
			if err != nil {
				return err
			}
			digests = append(digests, d)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.Update(bg, func(tx *Tx) error {
		for _, d := range digests {
			if err := tx.DeleteBody(d); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	cheap, err := st.FileSpace()
	if err != nil {
		t.Fatal(err)
	}
	full, err := st.Space()
	if err != nil {
		t.Fatal(err)
	}
	if cheap.Buckets != nil || len(full.Buckets) == 0 {
		t.Fatalf("buckets: FileSpace %d, Space %d", len(cheap.Buckets), len(full.Buckets))
	}
	full.Buckets = nil
	if fmt.Sprint(cheap) != fmt.Sprint(full) {
		t.Fatalf("FileSpace %+v, Space %+v", cheap, full)
	}
	if cheap.FreePages < 20 || cheap.FreeBytes() != int64(cheap.FreePages*cheap.PageSize) || cheap.UsedBytes > cheap.FileBytes {
		t.Fatalf("%+v: want the deleted bodies' pages free", cheap)
	}
}
