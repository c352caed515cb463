package bolt

import (
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events/fold"
	bbolt "go.etcd.io/bbolt"
)

// Issue 24 finding 6: one bit flipped in the txid of the newest bbolt meta
// page makes bbolt open the previous meta, losing the last commit; Verify
// fails naming the loss (a damaged older meta page fails too, saying the
// newest commit stands).
func TestVerifyFindsALostLastCommit(t *testing.T) {
	for _, c := range []struct {
		name   string
		newest bool // flip the newest meta page (else the older one)
		want   string
	}{
		{"newest meta", true, "lost its last commit"},
		{"older meta", false, "the newest commit stands"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, projs := tamperFixture(t)
			_, txid := headAndTxid(t, path, projs)
			page, field := txid%2, metaTxid
			if !c.newest {
				page, field = (txid+1)%2, metaChecksum // the txid stays readable
			}
			flipBit(t, path, int64(page), field)
			_, after := headAndTxid(t, path, projs)
			if c.newest != (after < txid) {
				t.Fatalf("bbolt opened transaction %d, then %d", txid, after)
			}
			damaged[path] = true
			err := verifyClosed(t, path, projs)
			var ve *VerifyError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("verify: %v, want a VerifyError saying %q", err, c.want)
			}
		})
	}
}

// headAndTxid is the ledger's last position and the txid of the meta page
// bbolt opens.
func headAndTxid(t *testing.T, path string, projs []fold.Projection) (uint64, uint64) {
	t.Helper()
	st, err := Open(path, Options{ReadOnly: true, Projections: projs})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var head, txid uint64
	if err := st.db.View(func(tx *bbolt.Tx) error {
		head, txid = tx.Bucket(bucketEvents).Sequence(), uint64(tx.ID())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return head, txid
}

// flipBit flips the lowest bit of a field of meta page page (pages 0
// and 1 sit at offsets 0 and the page size).
func flipBit(t *testing.T, path string, page int64, field int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(binary.NativeEndian.Uint32(b[metaOffset+8:])) // the meta's page size
	b[page*size+int64(field)] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
