package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// indexDB is a scratch bbolt file with the two index buckets, checked by
// bbolt on close.
func indexDB(t *testing.T) *bbolt.DB {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "index.db"), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = db.View(func(tx *bbolt.Tx) error {
			for err := range tx.Check() {
				t.Errorf("bbolt check: %v", err)
			}
			return nil
		})
		db.Close()
	})
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketIDBlocks, bucketStreamBlocks} {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// tid is a 16-byte id ordered as n.
func tid(n uint64) [16]byte {
	var id [16]byte
	binary.BigEndian.PutUint64(id[8:], n)
	return id
}

// commitIDs indexes ids (position = id number) in one transaction, in the
// order given.
func commitIDs(db *bbolt.DB, ids ...uint64) error {
	return db.Update(func(tx *bbolt.Tx) error {
		var w indexWriter
		w.ids = make([]idEntry, 0, len(ids))
		for _, n := range ids {
			w.ids = append(w.ids, idEntry{tid(n), n})
		}
		return w.flush(tx.Bucket(bucketIDBlocks), tx.Bucket(bucketStreamBlocks), &valueArena{})
	})
}

// idLayout is the id blocks as (first id, pairs) in key order.
func idLayout(t *testing.T, db *bbolt.DB) [][2]uint64 {
	t.Helper()
	var out [][2]uint64
	err := db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketIDBlocks).ForEach(func(k, v []byte) error {
			blk, err := decodeIDBlock(k, v)
			if err != nil {
				return err
			}
			out = append(out, [2]uint64{binary.BigEndian.Uint64(k[8:]), uint64(blk.n())})
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func seq(from, to, step uint64) []uint64 {
	var out []uint64
	for n := from; n <= to; n += step {
		out = append(out, n)
	}
	return out
}

func TestIDBlocks(t *testing.T) {
	cases := []struct {
		name    string
		commits [][]uint64
		layout  [][2]uint64 // (first id, pairs) per block
	}{
		{"in order, one commit, fills blocks to the cap", [][]uint64{seq(1, 80, 1)},
			[][2]uint64{{1, 32}, {33, 32}, {65, 16}}},
		{"in order over commits appends to the last block", [][]uint64{seq(1, 20, 1), seq(21, 50, 1), seq(51, 51, 1)},
			[][2]uint64{{1, 32}, {33, 19}}},
		{"a full last block is not rewritten; the next id starts a block", [][]uint64{seq(1, 32, 1), {500}},
			[][2]uint64{{1, 32}, {500, 1}}},
		{"out of order in one commit is sorted first", [][]uint64{{5, 3, 9, 1}},
			[][2]uint64{{1, 4}}},
		{"an insert into a full block splits it into half-full blocks", [][]uint64{seq(2, 64, 2), {3}},
			[][2]uint64{{2, 11}, {22, 11}, {44, 11}}},
		{"ids before every block form a block of their own", [][]uint64{seq(100, 109, 1), {1, 2, 3}},
			[][2]uint64{{1, 3}, {100, 10}}},
		{"one commit touching several blocks", [][]uint64{seq(2, 150, 2), {3, 67, 151, 200}},
			[][2]uint64{{2, 11}, {22, 11}, {44, 11}, {66, 11}, {86, 11}, {108, 11}, {130, 13}}},
		{"an insert into a block with room stays in it", [][]uint64{seq(10, 100, 10), {55}},
			[][2]uint64{{10, 11}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := indexDB(t)
			var all []uint64
			for _, ids := range c.commits {
				if err := commitIDs(db, ids...); err != nil {
					t.Fatal(err)
				}
				all = append(all, ids...)
			}
			if got := idLayout(t, db); !slices.Equal(got, c.layout) {
				t.Errorf("layout %v, want %v", got, c.layout)
			}
			checkIDLookups(t, db, all)
		})
	}
}

// checkIDLookups looks up every indexed id, its neighbours and ids outside
// every block, in order and in reverse (moving the cached block both ways).
func checkIDLookups(t *testing.T, db *bbolt.DB, indexed []uint64) {
	t.Helper()
	in := map[uint64]bool{}
	probe := []uint64{0}
	for _, n := range indexed {
		in[n] = true
		probe = append(probe, n-1, n, n+1)
	}
	probe = append(probe, 1<<40)
	reversed := slices.Clone(probe)
	slices.Reverse(reversed)
	err := db.View(func(tx *bbolt.Tx) error {
		x := idIndex{b: tx.Bucket(bucketIDBlocks)}
		for _, n := range append(probe, reversed...) {
			id := tid(n)
			pos, ok, err := x.get(id[:])
			if err != nil {
				return err
			}
			if ok != in[n] || ok && pos != n {
				t.Errorf("lookup %d: (%d, %v), want present %v", n, pos, ok, in[n])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Blocks of up to idBlockMax pairs, which builds before the cap of 32
// wrote, are read, never appended to, and split into blocks within the cap
// by an insert.
func TestIDBlocksOfAnOlderBuild(t *testing.T) {
	db := indexDB(t)
	old := seq(1, 2*idBlockMax, 2) // ids 1, 3, ..., 255 at their own positions
	var v []byte
	for _, n := range old {
		v = append(v, pairs(n, n)...)
	}
	err := db.Update(func(tx *bbolt.Tx) error {
		k := tid(1)
		return tx.Bucket(bucketIDBlocks).Put(k[:], v)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := commitIDs(db, 300, 301); err != nil {
		t.Fatal(err)
	}
	if got, want := idLayout(t, db), [][2]uint64{{1, idBlockMax}, {300, 2}}; !slices.Equal(got, want) {
		t.Fatalf("after an append: layout %v, want %v", got, want)
	}
	if err := commitIDs(db, 2); err != nil {
		t.Fatal(err)
	}
	// 129 pairs in ceil(2*129/32) = 9 blocks of at most 15.
	got := idLayout(t, db)
	if len(got) != 10 || got[0] != [2]uint64{1, 15} || got[9] != [2]uint64{300, 2} {
		t.Fatalf("after an insert: layout %v", got)
	}
	checkIDLookups(t, db, append(old, 300, 301, 2))
}

func TestIDBlocksRefuseDuplicates(t *testing.T) {
	cases := map[string][][]uint64{
		"twice in one commit":        {{1, 2, 2}},
		"again in a later commit":    {{1, 2, 3}, {2}},
		"a block's first id again":   {{1, 2, 3}, {1}},
		"twice in a group of blocks": {seq(1, 200, 1), {150, 150}},
	}
	for name, commits := range cases {
		t.Run(name, func(t *testing.T) {
			db := indexDB(t)
			var err error
			for _, ids := range commits {
				if err = commitIDs(db, ids...); err != nil {
					break
				}
			}
			if !errors.Is(err, errBlock) {
				t.Fatalf("got %v, want a malformed-block error", err)
			}
		})
	}
}

// commitStream indexes versions base+1.. of stream (position = 1000 +
// version) in one transaction.
func commitStream(db *bbolt.DB, stream string, base uint64, n int) error {
	return db.Update(func(tx *bbolt.Tx) error {
		var w indexWriter
		for i := 1; i <= n; i++ {
			v := base + uint64(i)
			if err := w.add(stream, v, tid(v), 1000+v); err != nil {
				return err
			}
		}
		return w.flushStreams(tx.Bucket(bucketStreamBlocks), &valueArena{})
	})
}

func TestStreamBlocks(t *testing.T) {
	cases := []struct {
		name    string
		commits []int // versions per commit
		layout  []string
	}{
		{"one version", []int{1}, []string{"1:1"}},
		{"a full block", []int{64}, []string{"1:64"}},
		{"one past a block", []int{65}, []string{"1:64", "65:1"}},
		{"the last block grows in place", []int{1, 1, 62}, []string{"1:64"}},
		{"a commit that fills the last block and starts two", []int{60, 100}, []string{"1:64", "65:64", "129:32"}},
		{"a commit right after a full block", []int{64, 1}, []string{"1:64", "65:1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := indexDB(t)
			var head uint64
			for _, n := range c.commits {
				if err := commitStream(db, "run/a", head, n); err != nil {
					t.Fatal(err)
				}
				head += uint64(n)
			}
			// Another stream whose keys sort right after: reads must not
			// cross into it.
			if err := commitStream(db, "run/a0", 0, 3); err != nil {
				t.Fatal(err)
			}
			err := db.View(func(tx *bbolt.Tx) error {
				b := tx.Bucket(bucketStreamBlocks)
				var layout []string
				prefix := append([]byte("run/a"), 0)
				err := b.ForEach(func(k, v []byte) error {
					if !hasPrefix(k, prefix) {
						return nil
					}
					_, first, ps, err := decodeStreamBlock(k, v)
					layout = append(layout, fmt.Sprintf("%d:%d", first, len(ps)/8))
					return err
				})
				if err != nil {
					return err
				}
				if !slices.Equal(layout, c.layout) {
					t.Errorf("layout %v, want %v", layout, c.layout)
				}
				for _, v := range []uint64{1, 63, 64, 65, 128, 129, head - 1, head, head + 1, 1 << 30} {
					pos, ok, err := streamPosition(b, "run/a", v)
					if err != nil {
						return err
					}
					if want := v >= 1 && v <= head; ok != want || ok && pos != 1000+v {
						t.Errorf("version %d: (%d, %v), want present %v", v, pos, ok, want)
					}
				}
				if last, err := lastIndexedVersion(b, "run/a"); err != nil || last != head {
					t.Errorf("last indexed version %d %v, want %d", last, err, head)
				}
				for _, after := range []uint64{0, 1, 63, 64, 65, head - 1, head, head + 5} {
					var got []uint64
					err := forStream(b, "run/a", after, func(v, pos uint64) error {
						if pos != 1000+v {
							t.Errorf("version %d at %d", v, pos)
						}
						got = append(got, v)
						return nil
					})
					if err != nil {
						return err
					}
					var want []uint64
					for v := after + 1; v <= head; v++ {
						want = append(want, v)
					}
					if !slices.Equal(got, want) {
						t.Errorf("after %d: versions %v, want %v", after, got, want)
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

func TestStreamBlocksRefuseAWrongHead(t *testing.T) {
	db := indexDB(t)
	if err := commitStream(db, "run/a", 0, 5); err != nil {
		t.Fatal(err)
	}
	// The head says 10, the block holds 5.
	if err := commitStream(db, "run/a", 10, 1); !errors.Is(err, errBlock) {
		t.Fatalf("got %v, want a malformed-block error", err)
	}
	// The head says 70, there is no block at 65.
	if err := commitStream(db, "run/a", 70, 1); !errors.Is(err, errBlock) {
		t.Fatalf("got %v, want a malformed-block error", err)
	}
	var w indexWriter
	if err := w.add("run/a", 3, tid(1), 1); err != nil {
		t.Fatal(err)
	}
	if err := w.add("run/a", 5, tid(2), 2); err == nil {
		t.Fatal("a version gap in one transaction was accepted")
	}
}

// pairs encodes (id, position) pairs.
func pairs(ps ...uint64) []byte {
	var out []byte
	for i := 0; i+1 < len(ps); i += 2 {
		id := tid(ps[i])
		out = binary.BigEndian.AppendUint64(append(out, id[:]...), ps[i+1])
	}
	return out
}

func positions(ps ...uint64) []byte {
	var out []byte
	for _, p := range ps {
		out = binary.BigEndian.AppendUint64(out, p)
	}
	return out
}

func TestDecodeBlocksRefuseMalformed(t *testing.T) {
	k1 := tid(1)
	long := pairs(seq(1, 2*(idBlockMax+1), 1)...) // idBlockMax+1 pairs (i, i+1)
	for i := 0; i < idBlockMax+1; i++ {
		id := tid(uint64(i + 1))
		copy(long[i*idPairSize:], id[:])
	}
	ids := map[string]struct{ k, v []byte }{
		"nil value":           {k1[:], nil},
		"empty value":         {k1[:], []byte{}},
		"partial pair":        {k1[:], pairs(1, 1)[:23]},
		"more than the cap":   {k1[:], long},
		"first id is not key": {k1[:], pairs(2, 1)},
		"ids not increasing":  {k1[:], pairs(1, 1, 3, 2, 3, 3)},
		"same id twice":       {k1[:], pairs(1, 1, 1, 2)},
		"position zero":       {k1[:], pairs(1, 1, 2, 0)},
		"key of 15 bytes":     {k1[1:], pairs(1, 1)},
	}
	for name, c := range ids {
		if _, err := decodeIDBlock(c.k, c.v); !errors.Is(err, errBlock) {
			t.Errorf("id block, %s: %v, want a malformed-block error", name, err)
		}
	}
	if _, err := decodeIDBlock(k1[:], long[:idBlockMax*idPairSize]); err != nil {
		t.Errorf("a full id block of an older build: %v", err)
	}
	streams := map[string]struct{ k, v []byte }{
		"no separator":           {[]byte("run/a12345678"), positions(1)},
		"zero in the stream":     {append([]byte("run\x00a"), streamKey("", 1)...), positions(1)},
		"empty stream":           {streamKey("", 1), positions(1)},
		"version zero":           {streamKey("run/a", 0), positions(1)},
		"not at a block's start": {streamKey("run/a", 2), positions(1)},
		"empty value":            {streamKey("run/a", 1), nil},
		"partial position":       {streamKey("run/a", 1), positions(1)[:7]},
		"more than the cap":      {streamKey("run/a", 1), positions(seq(1, streamBlockCap+1, 1)...)},
		"positions not rising":   {streamKey("run/a", 1), positions(5, 5)},
		"position zero":          {streamKey("run/a", 65), positions(0)},
	}
	for name, c := range streams {
		if _, _, _, err := decodeStreamBlock(c.k, c.v); !errors.Is(err, errBlock) {
			t.Errorf("stream block, %s: %v, want a malformed-block error", name, err)
		}
	}
	if s, first, ps, err := decodeStreamBlock(streamKey("run/a", 65), positions(seq(7, 7+streamBlockCap-1, 1)...)); err != nil || string(s) != "run/a" || first != 65 || len(ps) != streamBlockCap*8 {
		t.Errorf("a full stream block: %q %d %d %v", s, first, len(ps), err)
	}
}

// FuzzDecodeIDBlock: whatever decodeIDBlock accepts is a bounded, sorted
// block starting at its key, in which every id is found where it is.
func FuzzDecodeIDBlock(f *testing.F) {
	k := tid(1)
	f.Add(k[:], pairs(1, 1, 2, 2))
	f.Add(k[:], pairs(1, 5, 1, 6))
	f.Add(k[:], pairs(seq(1, 2*idBlockMax, 1)...))
	f.Fuzz(func(t *testing.T, k, v []byte) {
		blk, err := decodeIDBlock(k, v)
		if err != nil {
			if !errors.Is(err, errBlock) {
				t.Fatalf("error %v is not a malformed-block error", err)
			}
			return
		}
		if blk.n() < 1 || blk.n() > idBlockMax || !bytes.Equal(blk.id(0), k) {
			t.Fatalf("accepted %d pairs from key %x", blk.n(), k)
		}
		for i := 0; i < blk.n(); i++ {
			if j, ok := blk.search(blk.id(i)); !ok || j != i || blk.pos(i) == 0 {
				t.Fatalf("pair %d: found at %d %v, position %d", i, j, ok, blk.pos(i))
			}
		}
	})
}

// FuzzDecodeStreamBlock: whatever decodeStreamBlock accepts is a bounded
// block at an aligned version of a valid-looking stream, positions rising.
func FuzzDecodeStreamBlock(f *testing.F) {
	f.Add(streamKey("run/a", 1), positions(1, 2, 3))
	f.Add(streamKey("run/a", 65), positions(9))
	f.Add(streamKey("run/a", 2), positions(3, 3))
	f.Fuzz(func(t *testing.T, k, v []byte) {
		s, first, ps, err := decodeStreamBlock(k, v)
		if err != nil {
			if !errors.Is(err, errBlock) {
				t.Fatalf("error %v is not a malformed-block error", err)
			}
			return
		}
		n := len(ps) / 8
		if len(s) == 0 || bytes.IndexByte(s, 0) >= 0 || first != streamBlockFirst(first) || n < 1 || n > streamBlockCap {
			t.Fatalf("accepted stream %q at %d with %d positions", s, first, n)
		}
		if !bytes.Equal(streamKey(string(s), first), k) {
			t.Fatalf("key %x does not re-encode", k)
		}
		for i := 1; i < n; i++ {
			if binary.BigEndian.Uint64(ps[i*8:]) <= binary.BigEndian.Uint64(ps[(i-1)*8:]) {
				t.Fatalf("positions do not rise at %d", i)
			}
		}
	})
}
