package bolt

import (
	"bytes"
	"testing"

	bbolt "go.etcd.io/bbolt"
)

// TestImportPackerPutsEveryValueInOrder: whoever packs a batch (the
// packer's goroutine, or the chunk's when the packer is behind), every
// value lands at its position, packed, including stored forms the caller
// reuses (owned false) and a partial last batch.
func TestImportPackerPutsEveryValueInOrder(t *testing.T) {
	const n = 3*packBatch + 17
	lines := sealAll(benchEnvelopes(n))
	modes := map[string]func() *importPacker{
		"packer": func() *importPacker { return newImportPacker(n) },
		// No goroutine takes a batch: the chunk packs every one itself.
		"chunk": func() *importPacker {
			out := make(chan *packJob)
			close(out)
			return &importPacker{in: make(chan *packJob), out: out}
		},
	}
	for name, start := range modes {
		t.Run(name, func(t *testing.T) {
			st, path := openTest(t, Options{})
			damaged[path] = true // events without their indexes: pages checked only
			err := st.Update(bg, func(tx *Tx) error {
				tx.wrote = true
				pk := start()
				defer pk.stop()
				var scratch []byte
				for i, line := range lines {
					enc, owned := line, i%2 == 0
					if !owned { // the caller overwrites it next time
						scratch = append(scratch[:0], line...)
						enc = scratch
					}
					if err := pk.add(tx, uint64(i+1), enc, owned); err != nil {
						return err
					}
				}
				return pk.finish(tx)
			})
			if err != nil {
				t.Fatal(err)
			}
			err = st.db.View(func(tx *bbolt.Tx) error {
				b := tx.Bucket(bucketEvents)
				for i, line := range lines {
					v := b.Get(u64(uint64(i + 1)))
					if len(v) == 0 || v[0] != packedTag {
						t.Fatalf("position %d: not packed", i+1)
					}
					got, err := unpackEvent(nil, v)
					if err != nil || !bytes.Equal(got, line) {
						t.Fatalf("position %d: %v\n got %s\nwant %s", i+1, err, got, line)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
