package bolt

import (
	"encoding/binary"
	"fmt"

	bbolt "go.etcd.io/bbolt"
)

// scrubBucket is a scratch bucket that exists only between the two
// transactions of scrubFreePages.
var scrubBucket = []byte("\x00scrub")

// scrubFreePages overwrites every free page of the file, so that a deleted
// body leaves no bytes behind. bbolt is copy-on-write: deleting a key
// writes a new page and only frees the old one, with its content intact
// until the page is reused; earlier copies of a page holding the text may
// also sit on the freelist. The first transaction allocates every free page
// as a zero-filled leaf of a scratch bucket (two elements per page, which
// bbolt never splits further), the second drops the bucket: the pages are
// free again, and hold zeros.
//
// It runs right after the write transaction that deleted a body, under the
// same exclusive file lock, so no reader can hold an older snapshot that
// pins a freed page. The file grows by about one page in 170 per run.
func (s *Store) scrubFreePages() error {
	var free int
	err := s.update(func(tx *bbolt.Tx) error {
		ps := s.db.Info().PageSize
		hwm := int(tx.Size() / int64(ps))
		for id := 2; id < hwm; id++ {
			if p, err := tx.Page(id); err == nil && p != nil && p.Type == "free" {
				free++
			}
		}
		if free == 0 {
			return nil
		}
		b, err := tx.CreateBucket(scrubBucket)
		if err != nil {
			return fmt.Errorf("scrub: %w", err)
		}
		b.FillPercent = 1.0
		// Page header 16 bytes, leaf element header 16, key 8: two
		// elements of this size fill one page exactly.
		val := make([]byte, (ps-16)/2-16-8)
		var k [8]byte
		for i := 0; i < 2*free+16; i++ {
			binary.BigEndian.PutUint64(k[:], uint64(i))
			if err := b.Put(k[:], val); err != nil {
				return fmt.Errorf("scrub: %w", err)
			}
		}
		return nil
	})
	if err != nil || free == 0 {
		return err
	}
	return s.update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket(scrubBucket); err != nil {
			return fmt.Errorf("scrub: %w", err)
		}
		return nil
	})
}
