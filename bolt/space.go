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

// Space reports the file's use by bucket, in one read transaction.
func (s *Store) Space() (Space, error) {
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
