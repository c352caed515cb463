package bolt

import (
	"os"
	"sort"

	bbolt "go.etcd.io/bbolt"
)

// BucketSpace is what one top-level bucket occupies (bbolt's own
// statistics, nested buckets included).
type BucketSpace struct {
	Name string
	Keys int
	// Inuse is the bytes of keys, values and page headers; Alloc the
	// bytes of the pages holding them (leaf and branch).
	Inuse, Alloc int64
	Depth        int
}

// Space is a ledger's file broken down by bucket, for docs/benchmarks.md
// and `tree-ring ledger compact`.
type Space struct {
	FileBytes int64
	PageSize  int
	// UsedBytes is bbolt's high-water mark (the pages ever allocated);
	// the rest of the file is bbolt's growth reserve (DB.AllocSize).
	UsedBytes int64
	// FreePages are free or pending pages below the high-water mark: what
	// a compaction would give back with the reserve. Known only to a
	// write open (a read-only open does not load the freelist).
	FreePages int
	Buckets   []BucketSpace // largest first
}

// FreeBytes is the bytes of the free pages (FreePages × PageSize).
func (sp Space) FreeBytes() int64 { return int64(sp.FreePages) * int64(sp.PageSize) }

// CompactThreshold is when a compaction is worth suggesting: free pages of
// at least MinFreeBytes and at least MinFreeShare of the pages in use.
type CompactThreshold struct {
	MinFreeBytes int64
	MinFreeShare float64
}

// CompactWorthwhile reports whether sp's free pages reach at. The pages in
// use (UsedBytes less the free pages), not the file, are the share's base:
// they are what a compaction copies, while the growth reserve (up to
// bbolt's 16 MiB) comes back with the next commit that needs a new page.
func (sp Space) CompactWorthwhile(at CompactThreshold) bool {
	free := sp.FreeBytes()
	inUse := sp.UsedBytes - free
	return free > 0 && free >= at.MinFreeBytes && float64(free) >= at.MinFreeShare*float64(inUse)
}

// FileSpace is Space without Buckets: the file's size, the high-water mark
// and the free and pending pages. It reads no page (a stat, bbolt's
// freelist counters as of the last write transaction, and the meta page's
// high-water mark), so it is cheap after an import of any size; FreePages
// is 0 in a read-only open.
func (s *Store) FileSpace() (Space, error) {
	var sp Space
	fi, err := os.Stat(s.path)
	if err != nil {
		return sp, err
	}
	sp.FileBytes = fi.Size()
	st := s.db.Stats()
	sp.FreePages = st.FreePageN + st.PendingPageN
	err = s.db.View(func(tx *bbolt.Tx) error {
		sp.PageSize = tx.DB().Info().PageSize
		sp.UsedBytes = tx.Size()
		return nil
	})
	return sp, err
}

// Space is FileSpace with the file's use by bucket (largest first): it
// walks every page of every bucket (FileSpace does not).
func (s *Store) Space() (Space, error) {
	sp, err := s.FileSpace()
	if err != nil {
		return sp, err
	}
	err = s.db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			bs := b.Stats()
			sp.Buckets = append(sp.Buckets, BucketSpace{
				Name: string(name), Keys: bs.KeyN, Depth: bs.Depth,
				Inuse: int64(bs.LeafInuse + bs.BranchInuse),
				Alloc: int64(bs.LeafAlloc + bs.BranchAlloc),
			})
			return nil
		})
	})
	sort.SliceStable(sp.Buckets, func(i, j int) bool { return sp.Buckets[i].Alloc > sp.Buckets[j].Alloc })
	return sp, err
}
