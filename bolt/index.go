package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"

	bbolt "go.etcd.io/bbolt"
)

// The ledger's two indexes (format 2, docs/ledger.md) hold blocks, not one
// key per event, so that an import of n events puts about n/streamBlockCap
// stream keys and n/idBlockCap id keys instead of 2n (each bbolt put is a
// search from the root):
//
//   - stream_blocks: key = stream id, 0x00, big-endian uint64 first version
//     of the block, always 1 + k*streamBlockCap; value = the big-endian
//     uint64 positions of versions first, first+1, ... (1..streamBlockCap of
//     them). Every block of a stream but its last is full; the last is
//     rewritten in place while it has room.
//   - id_blocks: key = the 16-byte id that starts the block; value = sorted
//     (id, big-endian uint64 position) pairs, 1..idBlockMax of them, the
//     first pair's id equal to the key. A block covers the ids in [key, next
//     key). Ids that arrive in order (monotonic ULIDs) append to the last
//     block; an id inside a full block splits it.
//
// A write transaction collects its entries in an indexWriter and rewrites
// each touched block once, at commit.
//
// This build writes id blocks of at most idBlockCap pairs and reads up to
// idBlockMax, which builds before it wrote (and still read: the format is
// unchanged). Every commit rewrites the last block and the leaf page that
// holds it; bbolt never splits a leaf of four values or fewer, so blocks of
// 128 pairs (3 KB) made that leaf a three- or four-page overflow written by
// every hook, where blocks of 32 (768 B) sit five to a page.
const (
	streamBlockCap = 64
	idBlockCap     = 32
	idBlockMax     = 128
	idPairSize     = 16 + 8
)

var (
	bucketStreamBlocks = []byte("stream_blocks")
	bucketIDBlocks     = []byte("id_blocks")
)

// streamBlockFirst is the first version of the block that holds version v
// (v >= 1).
func streamBlockFirst(v uint64) uint64 { return 1 + (v-1)/streamBlockCap*streamBlockCap }

// streamBlockKey is the key of the block that holds version v of stream.
func streamBlockKey(stream string, v uint64) []byte {
	return streamKey(stream, streamBlockFirst(v))
}

// errBlock is the cause of every malformed-block error.
var errBlock = errors.New("malformed index block")

// decodeStreamBlock checks a stream_blocks entry and returns its stream,
// first version and positions (aliasing v). Linear in len(v), bounded by
// streamBlockCap.
func decodeStreamBlock(k, v []byte) (stream []byte, first uint64, positions []byte, err error) {
	if len(k) < 10 || k[len(k)-9] != 0 || bytes.IndexByte(k[:len(k)-9], 0) >= 0 {
		return nil, 0, nil, fmt.Errorf("%w: stream key %q", errBlock, k)
	}
	stream, first = k[:len(k)-9], binary.BigEndian.Uint64(k[len(k)-8:])
	if first == 0 || streamBlockFirst(first) != first {
		return nil, 0, nil, fmt.Errorf("%w: stream %s block starts at version %d", errBlock, stream, first)
	}
	n := len(v) / 8
	if v == nil || len(v)%8 != 0 || n == 0 || n > streamBlockCap {
		return nil, 0, nil, fmt.Errorf("%w: stream %s block at version %d holds %d bytes", errBlock, stream, first, len(v))
	}
	var prev uint64
	for i := 0; i < n; i++ {
		p := binary.BigEndian.Uint64(v[i*8:])
		if p <= prev {
			return nil, 0, nil, fmt.Errorf("%w: stream %s version %d: position %d after %d", errBlock, stream, first+uint64(i), p, prev)
		}
		prev = p
	}
	return stream, first, v, nil
}

// idBlock is the value of an id_blocks entry: sorted (id, position) pairs.
type idBlock []byte

func (b idBlock) n() int           { return len(b) / idPairSize }
func (b idBlock) id(i int) []byte  { return b[i*idPairSize : i*idPairSize+16] }
func (b idBlock) pos(i int) uint64 { return binary.BigEndian.Uint64(b[i*idPairSize+16:]) }

// search returns where id is or would be inserted, and whether it is there.
func (b idBlock) search(id []byte) (int, bool) {
	lo, hi := 0, b.n()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(b.id(m), id) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < b.n() && bytes.Equal(b.id(lo), id)
}

// decodeIDBlock checks an id_blocks entry: 1..idBlockMax pairs, ids
// strictly increasing from the key, positions not zero. Linear in len(v).
func decodeIDBlock(k, v []byte) (idBlock, error) {
	if len(k) != 16 {
		return nil, fmt.Errorf("%w: id block key of %d bytes", errBlock, len(k))
	}
	b := idBlock(v)
	if v == nil || len(v)%idPairSize != 0 || b.n() == 0 || b.n() > idBlockMax {
		return nil, fmt.Errorf("%w: id block %x holds %d bytes", errBlock, k, len(v))
	}
	if !bytes.Equal(b.id(0), k) {
		return nil, fmt.Errorf("%w: id block %x starts with id %x", errBlock, k, b.id(0))
	}
	for i := 0; i < b.n(); i++ {
		if i > 0 && bytes.Compare(b.id(i-1), b.id(i)) >= 0 {
			return nil, fmt.Errorf("%w: id block %x: id %x after %x", errBlock, k, b.id(i), b.id(i-1))
		}
		if b.pos(i) == 0 {
			return nil, fmt.Errorf("%w: id block %x: id %x at position 0", errBlock, k, b.id(i))
		}
	}
	return b, nil
}

// idIndex looks ids up in id_blocks (Seek, Prev, a binary search in the
// block) with one cursor, keeping the last block it read: ids looked up in
// order (an import's plan) mostly fall in the same block. It is valid for
// one transaction, and only while id_blocks is not written (a Tx writes it
// at commit, after its last lookup).
type idIndex struct {
	b      *bbolt.Bucket
	c      *bbolt.Cursor
	loaded bool
	lo, hi []byte // the cached range [lo, hi); nil lo: before every block, nil hi: to the end
	blk    idBlock
}

// get returns the position of id, or false when it is not indexed.
func (x *idIndex) get(id []byte) (uint64, bool, error) {
	if !x.loaded || (x.lo != nil && bytes.Compare(id, x.lo) < 0) || (x.hi != nil && bytes.Compare(id, x.hi) >= 0) {
		if err := x.load(id); err != nil {
			return 0, false, err
		}
	}
	if x.blk == nil {
		return 0, false, nil
	}
	i, ok := x.blk.search(id)
	if !ok {
		return 0, false, nil
	}
	return x.blk.pos(i), true, nil
}

// load caches the block that covers id.
func (x *idIndex) load(id []byte) error {
	if x.c == nil {
		x.c = x.b.Cursor()
	}
	k, v, next := seekIDBlock(x.c, id)
	x.loaded, x.hi, x.lo, x.blk = true, next, nil, nil
	if k == nil {
		return nil
	}
	blk, err := decodeIDBlock(k, v)
	if err != nil {
		return err
	}
	x.lo, x.blk = k, blk
	return nil
}

// seekIDBlock positions c on the id_blocks entry that covers id (k nil:
// id comes before every block) and returns the key of the entry after it
// (nil: none).
func seekIDBlock(c *bbolt.Cursor, id []byte) (k, v, next []byte) {
	k, v = c.Seek(id)
	if k != nil && bytes.Equal(k, id) {
		next, _ = c.Next()
		return k, v, next
	}
	next = k
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	return k, v, next
}

// streamPosition returns the position of version v of stream.
func streamPosition(b *bbolt.Bucket, stream string, v uint64) (uint64, bool, error) {
	k := streamBlockKey(stream, v)
	val := b.Get(k)
	if val == nil {
		return 0, false, nil
	}
	_, first, ps, err := decodeStreamBlock(k, val)
	if err != nil {
		return 0, false, err
	}
	if i := v - first; i < uint64(len(ps)/8) {
		return binary.BigEndian.Uint64(ps[i*8:]), true, nil
	}
	return 0, false, nil
}

// forStream calls fn with the version and position of every indexed
// version of stream after `after`, in order.
func forStream(b *bbolt.Bucket, stream string, after uint64, fn func(version, pos uint64) error) error {
	prefix := append([]byte(stream), 0)
	want := after + 1
	c := b.Cursor()
	for k, v := c.Seek(streamBlockKey(stream, want)); k != nil && hasPrefix(k, prefix); k, v = c.Next() {
		_, first, ps, err := decodeStreamBlock(k, v)
		if err != nil {
			return err
		}
		if first > want {
			return fmt.Errorf("%w: stream %s: a block starts at version %d, the previous one ends before %d", errBlock, stream, first, want)
		}
		for i := want - first; i < uint64(len(ps)/8); i++ {
			if err := fn(first+i, binary.BigEndian.Uint64(ps[i*8:])); err != nil {
				return err
			}
			want++
		}
	}
	return nil
}

type idEntry struct {
	id  [16]byte
	pos uint64
}

// streamRun is one stream's new versions in a transaction: base+1, ...
type streamRun struct {
	base uint64
	pos  []uint64
}

// indexWriter collects one write transaction's index entries and writes
// them at commit (flush), grouped per block so each touched block is put
// once. Lookups during the transaction consult it before the buckets. Not
// for concurrent use.
type indexWriter struct {
	ids     []idEntry
	byID    map[[16]byte]uint64 // ids[:mapped], built by the first lookup
	mapped  int
	streams map[string]*streamRun
	// runs and slab back the streams' runs and their first positions: an
	// import touches a thousand streams a transaction, a few versions each.
	runs []streamRun
	slab []uint64
}

// runSlab is how many streamRuns (and of their first eight positions)
// one allocation of indexWriter.runs (and .slab) holds.
const runSlab = 256

// newRun returns an empty run of a stream after version base.
func (w *indexWriter) newRun(base uint64) *streamRun {
	if len(w.runs) == cap(w.runs) {
		w.runs = make([]streamRun, 0, runSlab)
		w.slab = make([]uint64, runSlab*8)
	}
	w.runs = append(w.runs, streamRun{base: base, pos: w.slab[:0:8]})
	w.slab = w.slab[8:]
	return &w.runs[len(w.runs)-1]
}

// reserve makes room for n more entries.
func (w *indexWriter) reserve(n int) { w.ids = slices.Grow(w.ids, n) }

// add records version of stream at pos with its id. Versions of a stream
// must come in order, each the next.
func (w *indexWriter) add(stream string, version uint64, id [16]byte, pos uint64) error {
	w.ids = append(w.ids, idEntry{id, pos})
	r := w.streams[stream]
	if r == nil {
		if w.streams == nil {
			w.streams = map[string]*streamRun{}
		}
		r = w.newRun(version - 1)
		w.streams[stream] = r
	}
	if r.base+uint64(len(r.pos))+1 != version {
		return fmt.Errorf("index %s@%d: the transaction's last version of the stream is %d", stream, version, r.base+uint64(len(r.pos)))
	}
	r.pos = append(r.pos, pos)
	return nil
}

// id returns the position of an id added in this transaction.
func (w *indexWriter) id(id [16]byte) (uint64, bool) {
	if len(w.ids) <= 16 { // a hook's few events: no map
		for _, e := range w.ids {
			if e.id == id {
				return e.pos, true
			}
		}
		return 0, false
	}
	if w.byID == nil {
		w.byID = make(map[[16]byte]uint64, len(w.ids))
	}
	for ; w.mapped < len(w.ids); w.mapped++ {
		w.byID[w.ids[w.mapped].id] = w.ids[w.mapped].pos
	}
	p, ok := w.byID[id]
	return p, ok
}

// flush writes the collected entries into the two index buckets and
// empties w. The stream blocks' values are built in a (bbolt keeps a
// value until commit).
func (w *indexWriter) flush(ids, streams *bbolt.Bucket, a *valueArena) error {
	if err := w.flushStreams(streams, a); err != nil {
		return err
	}
	if err := w.flushIDs(ids); err != nil {
		return err
	}
	w.ids, w.byID, w.mapped, w.streams, w.runs, w.slab = w.ids[:0], nil, 0, nil, nil, nil
	return nil
}

func (w *indexWriter) flushStreams(b *bbolt.Bucket, a *valueArena) error {
	var key []byte // bbolt copies keys
	for _, name := range slices.Sorted(maps.Keys(w.streams)) {
		var err error
		if key, err = putStreamRun(b, a, key, name, w.streams[name]); err != nil {
			return err
		}
	}
	return nil
}

// putStreamRun writes r, stream name's new versions, into its blocks,
// building their values in a; key is a buffer for the keys, returned for
// the next call.
func putStreamRun(b *bbolt.Bucket, a *valueArena, key []byte, name string, r *streamRun) ([]byte, error) {
	first := streamBlockFirst(r.base + 1)
	var val []byte
	if r.base%streamBlockCap != 0 {
		// The stream's last block has room: rewrite it with the new
		// positions appended.
		key = appendStreamKey(key[:0], name, first)
		old := b.Get(key)
		if old == nil {
			return key, fmt.Errorf("%w: stream %s is at version %d but has no block at version %d", errBlock, name, r.base, first)
		}
		_, _, ps, err := decodeStreamBlock(key, old)
		if err != nil {
			return key, err
		}
		if have := uint64(len(ps) / 8); have != r.base-first+1 {
			return key, fmt.Errorf("%w: stream %s is at version %d but its block at version %d holds %d versions", errBlock, name, r.base, first, have)
		}
		val = append(a.alloc(min(streamBlockCap, len(ps)/8+len(r.pos))*8), ps...)
	}
	for i, p := range r.pos {
		if len(val) == streamBlockCap*8 {
			if err := b.Put(appendStreamKey(key[:0], name, first), val); err != nil {
				return key, fmt.Errorf("index stream %s: %w", name, err)
			}
			first += streamBlockCap
			val = nil
		}
		if val == nil {
			val = a.alloc(min(streamBlockCap, len(r.pos)-i) * 8)
		}
		val = binary.BigEndian.AppendUint64(val, p)
	}
	key = appendStreamKey(key[:0], name, first)
	if err := b.Put(key, val); err != nil {
		return key, fmt.Errorf("index stream %s: %w", name, err)
	}
	return key, nil
}

// appendStreamKey appends streamKey(stream, version) to k.
func appendStreamKey(k []byte, stream string, version uint64) []byte {
	k = append(k, stream...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, version)
}

// alloc returns an empty slice with room for n bytes, carved from the
// arena's slab (see valueArena) when n is small.
func (a *valueArena) alloc(n int) []byte {
	start, ok := a.room(n)
	if !ok {
		return make([]byte, 0, n)
	}
	a.slab = a.slab[:start+n]
	return a.slab[start : start : start+n]
}

func compareIDEntry(a, b idEntry) int { return bytes.Compare(a.id[:], b.id[:]) }

func (w *indexWriter) flushIDs(b *bbolt.Bucket) error {
	ents := w.ids
	if !slices.IsSortedFunc(ents, compareIDEntry) {
		slices.SortFunc(ents, compareIDEntry)
	}
	c := b.Cursor()
	for i := 0; i < len(ents); {
		id := ents[i].id[:]
		// The block that covers id, and the key of the one after it: the
		// entries up to that key go into this block.
		k, v, next := seekIDBlock(c, id)
		if k != nil && bytes.Equal(k, id) {
			return fmt.Errorf("%w: id %x is indexed already", errBlock, id)
		}
		var old idBlock
		if k != nil {
			var err error
			if old, err = decodeIDBlock(k, v); err != nil {
				return err
			}
		}
		j := i + 1
		for j < len(ents) && (next == nil || bytes.Compare(ents[j].id[:], next) < 0) {
			j++
		}
		if err := putIDBlocks(b, old, ents[i:j]); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// putIDBlocks merges group (sorted, all within old's range, or before
// every block when old is nil) into old and puts the result, split into
// blocks of at most idBlockCap pairs. Ids that all come after old's last
// fill blocks to the cap (the in-order case); an insert inside a block that
// overflows splits it into half-full blocks.
func putIDBlocks(b *bbolt.Bucket, old idBlock, group []idEntry) error {
	appendOnly := old == nil || bytes.Compare(group[0].id[:], old.id(old.n()-1)) > 0
	if appendOnly && old.n() >= idBlockCap {
		old = nil // full (an older build's up to idBlockMax): the group starts a block of its own
	}
	n := old.n() + len(group)
	merged := make([]byte, 0, n*idPairSize)
	appendPair := func(e idEntry) {
		merged = append(merged, e.id[:]...)
		merged = binary.BigEndian.AppendUint64(merged, e.pos)
	}
	var last []byte
	i := 0
	for _, e := range group {
		for ; i < old.n() && bytes.Compare(old.id(i), e.id[:]) < 0; i++ {
			merged = append(merged, old[i*idPairSize:(i+1)*idPairSize]...)
		}
		if i < old.n() && bytes.Equal(old.id(i), e.id[:]) || last != nil && bytes.Equal(last, e.id[:]) {
			return fmt.Errorf("%w: id %x is indexed twice", errBlock, e.id)
		}
		appendPair(e)
		last = merged[len(merged)-idPairSize : len(merged)-8]
	}
	merged = append(merged, old[i*idPairSize:]...)
	size := idBlockCap // pairs per block
	if !appendOnly && n > idBlockCap {
		pieces := (2*n + idBlockCap - 1) / idBlockCap
		size = (n + pieces - 1) / pieces
	}
	for lo := 0; lo < n; lo += size {
		blk := merged[lo*idPairSize : min(lo+size, n)*idPairSize]
		if err := b.Put(blk[:16], blk); err != nil {
			return fmt.Errorf("index ids: %w", err)
		}
	}
	return nil
}

// indexErr makes a malformed block a *CorruptError of the ledger.
func (s *Store) indexErr(err error) error {
	if errors.Is(err, errBlock) {
		var ce *CorruptError
		if !errors.As(err, &ce) {
			return &CorruptError{Path: s.path, Err: err}
		}
	}
	return err
}
