package bolt

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"

	bbolt "go.etcd.io/bbolt"
)

// bbolt's meta page layout (go.etcd.io/bbolt internal/common: a 16-byte
// page header, then magic, version, page size, flags (4 bytes each), the
// root bucket (16), freelist, high water mark, txid and checksum (8
// each), in the machine's byte order; the checksum is FNV-64a of the meta
// up to it). bbolt writes commit txid's meta to page txid%2 and opens the
// valid page with the higher txid.
const (
	metaOffset   = 16
	metaTxid     = metaOffset + 48
	metaChecksum = metaOffset + 56
	metaMagic    = 0xED0CDAED
)

// checkMetas reads bbolt's two meta pages of the ledger file at path,
// whose open transaction tx runs at the chosen meta's txid. A damaged meta
// page (bad magic or checksum) is a failed verification. Unless it still
// states the older commit's txid (tx's minus one), it may have held the
// newest commit (both txid-1 and txid+1 live in that slot, and the damage
// may be in the txid), and bbolt fell back to the older meta: that commit
// is lost to every reader, though files written with it (its receipt) remain, and
// the failure names the loss. The next commit rewrites that slot, after
// which the file alone cannot tell (docs/ledger.md).
func checkMetas(path string, tx *bbolt.Tx) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read the meta pages: %w", err)
	}
	defer f.Close()
	size := tx.DB().Info().PageSize
	cur := uint64(tx.ID())
	for page := range 2 {
		buf := make([]byte, metaChecksum+8)
		if _, err := f.ReadAt(buf, int64(page*size)); err != nil && err != io.EOF {
			return fmt.Errorf("read meta page %d: %w", page, err)
		}
		if metaValid(buf) {
			continue
		}
		if stored := binary.NativeEndian.Uint64(buf[metaTxid:]); stored+1 == cur {
			return &VerifyError{Detail: fmt.Sprintf("bbolt meta page %d (the older commit, transaction %d) is damaged; the newest commit stands", page, stored)}
		}
		return &VerifyError{Detail: fmt.Sprintf("bbolt meta page %d is damaged, so bbolt opened meta page %d (transaction %d): "+
			"if the damaged page held the newer commit (transaction %d), it is lost to every reader: the ledger lost its last commit(s)", page, cur%2, cur, cur+1)}
	}
	return nil
}

// metaValid checks a meta page's magic and checksum.
func metaValid(buf []byte) bool {
	o := binary.NativeEndian
	if o.Uint32(buf[metaOffset:]) != metaMagic {
		return false
	}
	h := fnv.New64a()
	h.Write(buf[metaOffset:metaChecksum])
	return h.Sum64() == o.Uint64(buf[metaChecksum:])
}
