package recall

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/tree-ring/tree-ring/events/fold"
)

// Batch returns the KV that a transaction's (or a rebuild chunk's) memory
// events are folded into. The fold reads and rewrites a posting block and
// a counter per token of every memory, and its factor block; the batch
// holds them in memory, by token and block, and writes each touched key
// once, in key order, when the store flushes it before the commit, with
// every other key the fold wrote (fold.Overlay). That replaces a bbolt
// search, read and insert per posting and per counter with one per block
// and counter per transaction (and a factor block, up to 18 KB, rewritten
// once per transaction, not once per memory).
// The bytes it leaves are those of the per-event fold over the plain KV
// (TestBatchFoldSameBytes). Like the transaction, not for concurrent use.
func Batch(kv KV) fold.Batch {
	return &batch{Overlay: fold.NewOverlay(kv), blocks: map[blockID]*block{}, counts: map[uint64]uint32{}, factors: map[uint32]*block{}}
}

type batch struct {
	*fold.Overlay
	blocks  map[blockID]*block // touched posting blocks, by token and range
	counts  map[uint64]uint32  // touched posting counts, by token
	factors map[uint32]*block  // touched factor blocks, by doc >> factShift
}

type blockID struct {
	tok uint64
	rng uint32 // ^(doc >> blockShift), as in the key
}

type block struct{ v []byte }

const (
	blockKeyLen  = 13 // 't' token(8) ^range(4)
	countKeyLen  = 9  // 't' token(8)
	factorKeyLen = 5  // 'f' doc>>factShift (4)
)

// The kinds of key the batch's own maps hold.
const (
	kindOther = iota
	kindBlock
	kindCount
	kindFactor
)

// typedKey reports which of the batch's own maps holds key, if any.
func typedKey(key []byte) (blockID, int) {
	switch {
	case len(key) == blockKeyLen && key[0] == pPost:
		return blockID{binary.BigEndian.Uint64(key[1:]), binary.BigEndian.Uint32(key[9:])}, kindBlock
	case len(key) == countKeyLen && key[0] == pCount:
		return blockID{tok: binary.BigEndian.Uint64(key[1:])}, kindCount
	case len(key) == factorKeyLen && key[0] == pFact:
		return blockID{rng: binary.BigEndian.Uint32(key[1:])}, kindFactor
	}
	return blockID{}, kindOther
}

// Get implements KV.
func (b *batch) Get(key []byte) []byte {
	switch id, p := typedKey(key); p {
	case kindBlock:
		if bl, ok := b.blocks[id]; ok {
			if len(bl.v) == 0 {
				return nil
			}
			return bl.v
		}
	case kindCount:
		if n, ok := b.counts[id.tok]; ok {
			if n == 0 {
				return nil
			}
			return binary.BigEndian.AppendUint32(nil, n)
		}
	case kindFactor:
		if bl, ok := b.factors[id.rng]; ok {
			if len(bl.v) == 0 {
				return nil
			}
			return bl.v
		}
	}
	return b.Overlay.Get(key)
}

// Put implements KV: a block or counter written as a plain key leaves the
// batch's maps.
func (b *batch) Put(key, value []byte) error {
	b.forget(key)
	return b.Overlay.Put(key, value)
}

// Delete implements KV.
func (b *batch) Delete(key []byte) error {
	b.forget(key)
	return b.Overlay.Delete(key)
}

func (b *batch) forget(key []byte) {
	switch id, p := typedKey(key); p {
	case kindBlock:
		delete(b.blocks, id)
	case kindCount:
		delete(b.counts, id.tok)
	case kindFactor:
		delete(b.factors, id.rng)
	}
}

// ForEach implements KV (queries inside a write transaction).
func (b *batch) ForEach(prefix []byte, fn func(k, v []byte) error) error {
	if err := b.settle(); err != nil {
		return err
	}
	return b.Overlay.ForEach(prefix, fn)
}

// Flush implements fold.Batch.
func (b *batch) Flush() error {
	if err := b.settle(); err != nil {
		return err
	}
	return b.Overlay.Flush()
}

// putOrDelete puts v at k, or deletes k when v is empty.
func (b *batch) putOrDelete(k, v []byte) error {
	if len(v) == 0 {
		return b.Overlay.Delete(k)
	}
	return b.Overlay.Put(k, v)
}

// settle moves the touched blocks and counters into the overlay as plain
// keys: an emptied one is a deletion, as in the per-event fold.
func (b *batch) settle() error {
	for id, bl := range b.blocks {
		k := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64([]byte{pPost}, id.tok), id.rng)
		if err := b.putOrDelete(k, bl.v); err != nil {
			return err
		}
	}
	for tok, n := range b.counts {
		var v []byte
		if n != 0 {
			v = binary.BigEndian.AppendUint32(nil, n)
		}
		if err := b.putOrDelete(binary.BigEndian.AppendUint64([]byte{pCount}, tok), v); err != nil {
			return err
		}
	}
	for rng, bl := range b.factors {
		if err := b.putOrDelete(binary.BigEndian.AppendUint32([]byte{pFact}, rng), bl.v); err != nil {
			return err
		}
	}
	clear(b.blocks)
	clear(b.counts)
	clear(b.factors)
	return nil
}

// block returns the touched block of (tok, doc), read from the KV on the
// first touch.
func (b *batch) block(tok uint64, doc uint32) *block {
	id := blockID{tok, ^(doc >> blockShift)}
	bl, ok := b.blocks[id]
	if !ok {
		bl = &block{v: append([]byte(nil), b.Overlay.Get(blockKey(tok, doc))...)}
		b.blocks[id] = bl
	}
	return bl
}

// count returns the touched count of tok, read from the KV on the first
// touch.
func (b *batch) count(tok uint64) uint32 {
	if n, ok := b.counts[tok]; ok {
		return n
	}
	return count(b.Overlay, tok)
}

// addPosting is addPosting on the batch: doc's posting goes first.
func (b *batch) addPosting(tok uint64, doc uint32) {
	bl := b.block(tok, doc)
	bl.v = append(bl.v, 0)
	copy(bl.v[1:], bl.v[:len(bl.v)-1])
	bl.v[0] = slot(doc)
	b.counts[tok] = b.count(tok) + 1
}

// removePosting is removePosting on the batch.
func (b *batch) removePosting(tok uint64, doc uint32) error {
	bl := b.block(tok, doc)
	i := bytes.IndexByte(bl.v, slot(doc))
	if i < 0 {
		return fmt.Errorf("recall: posting of doc %d missing from its block", doc)
	}
	bl.v = append(bl.v[:i], bl.v[i+1:]...)
	b.counts[tok] = b.count(tok) - 1
	return nil
}

// setFactors is setFactors on the batch: the block is copied from the KV
// on the first touch and changed in place after (a block is up to 18 KB:
// a copy per memory cost the rebuild a tenth of its time).
func (b *batch) setFactors(doc uint32, e *[factorLen]byte) {
	rng := doc >> factShift
	bl, ok := b.factors[rng]
	if !ok {
		bl = &block{v: bytes.Clone(b.Overlay.Get(factorKey(doc)))}
		b.factors[rng] = bl
	}
	bl.v = putFactors(bl.v, doc, e)
}
