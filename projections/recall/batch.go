package recall

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/tree-ring/tree-ring/events/fold"
)

// Batch returns the KV that a transaction's (or a rebuild chunk's) memory
// events are folded into. The fold reads and rewrites a posting block and
// a count key per token of every memory, and its factor block; the batch
// holds them in memory, by token and block, and writes each touched key
// once, in key order, when the store flushes it before the commit, with
// every other key the fold wrote (fold.Overlay). That replaces a bbolt
// search, read and insert per posting and per counter with one per block
// and counter per transaction (and a factor block, up to 18 KB, rewritten
// once per transaction, not once per memory).
// The bytes it leaves are those of the per-event fold over the plain KV
// (TestBatchFoldSameBytes). Like the transaction, not for concurrent use.
func Batch(kv KV) fold.Batch {
	return &batch{Overlay: fold.NewOverlay(kv), base: kv, blocks: map[blockID]*block{}, toks: map[uint64]*tokState{},
		factors: map[uint32]*block{}, held: map[uint64][]uint32{}}
}

type batch struct {
	*fold.Overlay
	base    KV                   // the Overlay's KV
	blocks  map[blockID]*block   // touched posting blocks, by token and range
	toks    map[uint64]*tokState // touched count keys, by token
	factors map[uint32]*block    // touched factor blocks, by doc >> factShift
	// held lists the ranges of the blocks a ForEach put in the Overlay
	// since the last Flush, by token: the blocks that are in neither
	// blocks nor base when a token's postings go inline again.
	held map[uint64][]uint32
}

type blockID struct {
	tok uint64
	rng uint32 // ^(doc >> blockShift), as in the key
}

type block struct{ v []byte }

// tokState is a touched token: its posting count and, while that is at
// most inlineMax, its postings (newest first); else its postings are in
// blocks.
type tokState struct {
	n      uint32
	inline []uint32
	ranges []uint32 // the ranges of its entries in blocks
}

// value is the token's count key value (nil: no key).
func (t *tokState) value() []byte {
	switch {
	case t.n == 0:
		return nil
	case t.n <= inlineMax:
		return inlineValue(t.inline)
	}
	return binary.BigEndian.AppendUint32(nil, t.n)
}

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
		if t, ok := b.toks[id.tok]; ok {
			return t.value()
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
		delete(b.toks, id.tok)
	case kindFactor:
		delete(b.factors, id.rng)
	}
}

// ForEach implements KV (queries inside a write transaction).
func (b *batch) ForEach(prefix []byte, fn func(k, v []byte) error) error {
	if err := b.settle(true); err != nil {
		return err
	}
	return b.Overlay.ForEach(prefix, fn)
}

// Flush implements fold.Batch.
func (b *batch) Flush() error {
	if err := b.settle(false); err != nil {
		return err
	}
	clear(b.held)
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
// keys: an emptied one is a deletion, as in the per-event fold. Before a
// flush (hold false) the blocks' ranges need no record.
func (b *batch) settle(hold bool) error {
	for id, bl := range b.blocks {
		k := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64([]byte{pPost}, id.tok), id.rng)
		if err := b.putOrDelete(k, bl.v); err != nil {
			return err
		}
		if hold {
			b.held[id.tok] = append(b.held[id.tok], id.rng)
		}
	}
	for tok, t := range b.toks {
		if err := b.putOrDelete(binary.BigEndian.AppendUint64([]byte{pCount}, tok), t.value()); err != nil {
			return err
		}
	}
	for rng, bl := range b.factors {
		if err := b.putOrDelete(binary.BigEndian.AppendUint32([]byte{pFact}, rng), bl.v); err != nil {
			return err
		}
	}
	clear(b.blocks)
	clear(b.toks)
	clear(b.factors)
	return nil
}

// tok returns the touched state of tok, read from the KV on the first
// touch.
func (b *batch) tok(tok uint64) (*tokState, error) {
	if t, ok := b.toks[tok]; ok {
		return t, nil
	}
	v := b.Overlay.Get(key(pCount, u64b(tok)))
	t := &tokState{n: countOf(v)}
	if t.n <= inlineMax {
		var err error
		if t.inline, err = inlineDocs(nil, v); err != nil {
			return nil, err
		}
	}
	b.toks[tok] = t
	return t, nil
}

// block returns the touched block of tok at rng, read from the KV on the
// first touch.
func (b *batch) block(tok uint64, t *tokState, rng uint32) *block {
	id := blockID{tok, rng}
	bl, ok := b.blocks[id]
	if !ok {
		k := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64([]byte{pPost}, tok), rng)
		bl = &block{v: bytes.Clone(b.Overlay.Get(k))}
		b.blocks[id] = bl
		t.ranges = append(t.ranges, rng)
	}
	return bl
}

// addPosting is addPosting on the batch: doc is the newest posting.
func (b *batch) addPosting(tok uint64, doc uint32) error {
	t, err := b.tok(tok)
	if err != nil {
		return err
	}
	if t.n < inlineMax {
		t.inline = slices.Insert(t.inline, 0, doc)
		t.n++
		return nil
	}
	if t.n == inlineMax {
		for i := len(t.inline) - 1; i >= 0; i-- { // oldest first: each goes first in its block
			b.blockPosting(tok, t, t.inline[i])
		}
		t.inline = t.inline[:0]
	}
	b.blockPosting(tok, t, doc)
	t.n++
	return nil
}

// blockPosting puts doc first in its block of tok.
func (b *batch) blockPosting(tok uint64, t *tokState, doc uint32) {
	bl := b.block(tok, t, ^(doc >> blockShift))
	bl.v = append(bl.v, 0)
	copy(bl.v[1:], bl.v[:len(bl.v)-1])
	bl.v[0] = slot(doc)
}

// removePosting is removePosting on the batch.
func (b *batch) removePosting(tok uint64, doc uint32) error {
	t, err := b.tok(tok)
	if err != nil {
		return err
	}
	if t.n <= inlineMax {
		i := slices.Index(t.inline, doc)
		if i < 0 {
			return fmt.Errorf("recall: posting of doc %d missing from its token", doc)
		}
		t.inline = slices.Delete(t.inline, i, i+1)
		t.n--
		return nil
	}
	bl := b.block(tok, t, ^(doc >> blockShift))
	i := bytes.IndexByte(bl.v, slot(doc))
	if i < 0 {
		return fmt.Errorf("recall: posting of doc %d missing from its block", doc)
	}
	bl.v = append(bl.v[:i], bl.v[i+1:]...)
	if t.n--; t.n == inlineMax {
		return b.unblock(tok, t)
	}
	return nil
}

// unblock moves a token's postings from its blocks inline (it is down to
// inlineMax), emptying the blocks (a deletion when settled). Its blocks
// are those touched in the batch, those a ForEach put in the Overlay and
// those in the KV under it: a prefix walk of the KV, not of the Overlay,
// which would visit every key the batch holds.
func (b *batch) unblock(tok uint64, t *tokState) error {
	rs := append(append([]uint32(nil), t.ranges...), b.held[tok]...)
	err := b.base.ForEach(key(pPost, u64b(tok)), func(k, _ []byte) error {
		if len(k) == blockKeyLen {
			rs = append(rs, binary.BigEndian.Uint32(k[9:]))
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(rs) // key order: newest range first
	docs := t.inline[:0]
	for _, rng := range slices.Compact(rs) {
		bl := b.block(tok, t, rng)
		for _, o := range bl.v {
			docs = append(docs, ^rng<<blockShift|uint32(o))
		}
		bl.v = bl.v[:0]
	}
	if len(docs) != inlineMax {
		return fmt.Errorf("recall: a token counts %d postings and has %d", t.n, len(docs))
	}
	t.inline = docs
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
