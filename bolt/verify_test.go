package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/fold"
	bbolt "go.etcd.io/bbolt"
)

// tamperFixture writes 5 events on two streams and a body, closes the
// ledger and returns its path.
func tamperFixture(t *testing.T) (string, []fold.Projection) {
	t.Helper()
	f := newFactory()
	projs := []fold.Projection{testProjection()}
	st, path := openTest(t, Options{Projections: projs})
	st.db.NoSync = true // not under test; keeps the many fixtures fast
	mustAppend(t, st, "run/a", 0, f.run("a", 1), f.run("a", 2))
	mustAppend(t, st, "harness/claude-code", 0, f.trust("claude-code"))
	mustAppend(t, st, "run/a", 2, f.run("a", 3))
	mustAppend(t, st, "run/b", 0, f.run("b", 1))
	if err := st.Update(bg, func(tx *Tx) error { _, err := tx.PutBody([]byte("memory text")); return err }); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Verify(bg); err != nil {
		t.Fatalf("fixture does not verify: %v", err)
	}
	st.Close()
	return path, projs
}

func verifyClosed(t *testing.T, path string, projs []fold.Projection) error {
	t.Helper()
	st, err := Open(path, Options{ReadOnly: true, Projections: projs})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer st.Close()
	_, err = st.Verify(bg)
	return err
}

// flipByte changes one byte of the stored envelope at pos, at the first
// occurrence of marker, and stores it packed again.
func flipByte(marker string, pos uint64) func(tx *bbolt.Tx) error {
	return func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketEvents)
		v, err := unpackEvent(nil, b.Get(u64(pos)))
		if err != nil {
			return err
		}
		v = append([]byte(nil), v...)
		i := bytes.Index(v, []byte(marker))
		if i < 0 {
			return errors.New("marker not found: " + marker)
		}
		i += len(marker)
		if v[i] == '1' {
			v[i] = '2'
		} else {
			v[i] = '1'
		}
		return b.Put(u64(pos), packEvent(nil, v))
	}
}

func TestVerifyNamesTamperedPosition(t *testing.T) {
	cases := []struct {
		name   string
		pos    uint64
		tamper func(tx *bbolt.Tx) error
		detail string
	}{
		{"payload byte", 3, flipByte(`"harness_id":"claude-cod`, 3), "content hashes to"},
		{"stage in payload", 4, flipByte(`"stage":"`, 4), "content hashes to"},
		{"recorded hash", 2, flipByte(`"hash":"`, 2), ""},
		{"prev_hash", 5, flipByte(`"prev_hash":"`, 5), "does not link"},
		{"version field", 4, flipByte(`"version":`, 4), ""},
		{"id", 1, flipByte(`"id":"01M6A6FT0000000000000000`, 1), ""},
		{"deleted event", 3, func(tx *bbolt.Tx) error { return tx.Bucket(bucketEvents).Delete(u64(3)) }, "gap"},
		{"swapped events", 1, func(tx *bbolt.Tx) error {
			b := tx.Bucket(bucketEvents)
			v1, v2 := append([]byte(nil), b.Get(u64(1))...), append([]byte(nil), b.Get(u64(2))...)
			if err := b.Put(u64(1), v2); err != nil {
				return err
			}
			return b.Put(u64(2), v1)
		}, ""},
		{"ids index", 4, func(tx *bbolt.Tx) error {
			// The pair of position 4 points at position 1 instead.
			return editIDBlocks(tx, func(blk []byte) {
				for i := 0; i < len(blk); i += idPairSize {
					if binary.BigEndian.Uint64(blk[i+16:]) == 4 {
						binary.BigEndian.PutUint64(blk[i+16:], 1)
					}
				}
			})
		}, "ids index"},
		{"ids block out of order", 1, func(tx *bbolt.Tx) error {
			// The second and third pairs swapped: the block is malformed.
			return editIDBlocks(tx, func(blk []byte) {
				a := append([]byte(nil), blk[idPairSize:2*idPairSize]...)
				copy(blk[idPairSize:], blk[2*idPairSize:3*idPairSize])
				copy(blk[2*idPairSize:], a)
			})
		}, "ids index"},
		{"streams index", 2, func(tx *bbolt.Tx) error {
			// run/a's block loses every version after the first.
			b := tx.Bucket(bucketStreamBlocks)
			k := streamKey("run/a", 1)
			return b.Put(k, append([]byte(nil), b.Get(k)[:8]...))
		}, "streams index"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, projs := tamperFixture(t)
			rawUpdate(t, path, c.tamper)
			err := verifyClosed(t, path, projs)
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Position != c.pos {
				t.Fatalf("verify: %v, want a failure at position %d", err, c.pos)
			}
			if !strings.Contains(err.Error(), "position ") || !strings.Contains(ve.Detail, c.detail) {
				t.Fatalf("message %q does not name the position or %q", err, c.detail)
			}
		})
	}
	if !t.Failed() {
		t.Logf("tamper: %d kinds of event and index damage, %d detected at the damaged position", len(cases), len(cases))
	}
}

func TestVerifyLedgerLevelDamage(t *testing.T) {
	cases := map[string]struct {
		tamper func(tx *bbolt.Tx) error
		detail string
	}{
		"chain head": {func(tx *bbolt.Tx) error {
			return tx.Bucket(bucketMeta).Put(keyChainHead, []byte(events.GenesisHash))
		}, "chain head"},
		"stray stream entry": {func(tx *bbolt.Tx) error {
			return tx.Bucket(bucketStreamBlocks).Put(streamKey("run/zz", 1), u64(1))
		}, "streams index has"},
		"head version": {func(tx *bbolt.Tx) error {
			return tx.Bucket(bucketHeads).Put([]byte("run/a"), append(u64(2), u64(4)...))
		}, "head of run/a"},
		"sequence": {func(tx *bbolt.Tx) error { return tx.Bucket(bucketEvents).SetSequence(9) }, "sequence says 9"},
		"body": {func(tx *bbolt.Tx) error {
			return tx.Bucket(bucketBodies).ForEach(func(k, v []byte) error {
				return tx.Bucket(bucketBodies).Put(append([]byte(nil), k...), []byte("other text"))
			})
		}, "memory body"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path, projs := tamperFixture(t)
			rawUpdate(t, path, c.tamper)
			err := verifyClosed(t, path, projs)
			var ve *VerifyError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), c.detail) {
				t.Fatalf("verify: %v, want %q", err, c.detail)
			}
		})
	}
}

func TestVerifyNamesTamperedProjection(t *testing.T) {
	cases := map[string]func(tx *bbolt.Tx) error{
		"value": func(tx *bbolt.Tx) error {
			return tx.Bucket(projBucket("test_counts")).Put([]byte("type/run.started"), binary.BigEndian.AppendUint64(nil, 99))
		},
		"extra key": func(tx *bbolt.Tx) error {
			return tx.Bucket(projBucket("test_counts")).Put([]byte("stream/run/zz"), u64(1))
		},
		"missing key": func(tx *bbolt.Tx) error {
			return tx.Bucket(projBucket("test_counts")).Delete([]byte("stream/run/b"))
		},
		"checkpoint past head": func(tx *bbolt.Tx) error {
			return tx.Bucket(bucketProjCP).Put([]byte("test_counts"), checkpoint(1, 99))
		},
	}
	for name, tamper := range cases {
		t.Run(name, func(t *testing.T) {
			path, projs := tamperFixture(t)
			rawUpdate(t, path, tamper)
			err := verifyClosed(t, path, projs)
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Projection != "test_counts" || !strings.Contains(err.Error(), "projection test_counts") {
				t.Fatalf("verify: %v, want a failure naming projection test_counts", err)
			}
		})
	}
	// A checkpoint at another version is a layout to migrate: the open
	// refuses it before verify runs; a rebuilding open lets verify name it.
	path, projs := tamperFixture(t)
	rawUpdate(t, path, func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketProjCP).Put([]byte("test_counts"), checkpoint(7, 5))
	})
	var pe *ProjectionMigrationError
	if _, err := Open(path, Options{ReadOnly: true, Projections: projs}); !errors.As(err, &pe) || pe.Projection != "test_counts" || pe.Found != 7 {
		t.Fatalf("open at another version: %v", err)
	}
	st, err := Open(path, Options{Rebuilding: true, Projections: projs})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ve *VerifyError
	if _, err := st.Verify(bg); !errors.As(err, &ve) || ve.Projection != "test_counts" || !strings.Contains(err.Error(), "stored at version 7") {
		t.Fatalf("verify at another version: %v", err)
	}
}

// TestVerifyLaggingProjection: a projection behind the head (appends by a
// process that does not register it) verifies up to its checkpoint, and
// catches up on the next read-write open.
func TestVerifyLaggingProjection(t *testing.T) {
	f := newFactory()
	projs := []fold.Projection{testProjection()}
	st, path := openTest(t, Options{Projections: projs})
	mustAppend(t, st, "run/a", 0, f.run("a", 1))
	st.Close()
	plain, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, plain, "run/a", 1, f.run("a", 2))
	plain.Close()
	if err := verifyClosed(t, path, projs); err != nil {
		t.Fatalf("lagging projection: %v", err)
	}
	st, err = Open(path, Options{Projections: projs})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_ = st.View(func(r *Reader) error {
		if v := r.Projection("test_counts").Get([]byte("type/run.started")); len(v) != 8 || v[7] != 2 {
			t.Errorf("not caught up: %v", v)
		}
		return nil
	})
}

// TestVerifyDetectsEveryFlippedByte changes every byte of every stored
// envelope in a small ledger, twice, one change at a time through bbolt
// (which does not checksum values), and runs Verify after each: every
// change must be detected and must name the damaged position. The changes
// are the subtle ones: the low bit (a neighbouring digit, letter or
// punctuation) and the ASCII case bit (hex and ULID text decode either
// case). No byte is exempt: the hash covers every field but itself, the
// recorded hash is compared with the recomputed one, and the stored bytes
// must equal the re-encoding of what they decode to.
func TestVerifyDetectsEveryFlippedByte(t *testing.T) {
	path, projs := tamperFixture(t)
	st, err := Open(path, Options{Projections: projs})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.db.NoSync = true // 5,000 commits; durability is not under test
	put := func(pos uint64, v []byte) {
		t.Helper()
		if err := st.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketEvents).Put(u64(pos), v) }); err != nil {
			t.Fatal(err)
		}
	}
	var stored [][]byte
	if err := st.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketEvents).ForEach(func(_, v []byte) error {
			stored = append(stored, append([]byte(nil), v...))
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	nbytes, flips, detected, named := 0, 0, 0, 0
	for i, orig := range stored {
		pos := uint64(i + 1)
		nbytes += len(orig)
		for j := range orig {
			for _, mask := range []byte{0x01, 0x20} {
				v := append([]byte(nil), orig...)
				v[j] ^= mask
				put(pos, v)
				_, err := st.Verify(bg)
				flips++
				var ve *VerifyError
				switch {
				case err == nil:
					t.Errorf("position %d byte %d (%q ^ %#x): not detected", pos, j, orig[j], mask)
				case errors.As(err, &ve) && ve.Position == pos:
					detected++
					named++
				default:
					detected++
					t.Errorf("position %d byte %d (%q ^ %#x): detected as %v", pos, j, orig[j], mask, err)
				}
			}
		}
		put(pos, orig)
	}
	if _, err := st.Verify(bg); err != nil {
		t.Fatalf("restored ledger: %v", err)
	}
	t.Logf("tamper: %d events, %d bytes, %d byte changes, %d detected, %d named the position",
		len(stored), nbytes, flips, detected, named)
}

// editIDBlocks rewrites every id block with edit applied to a copy.
func editIDBlocks(tx *bbolt.Tx, edit func(blk []byte)) error {
	b := tx.Bucket(bucketIDBlocks)
	type kv struct{ k, v []byte }
	var all []kv
	if err := b.ForEach(func(k, v []byte) error {
		all = append(all, kv{append([]byte(nil), k...), append([]byte(nil), v...)})
		return nil
	}); err != nil {
		return err
	}
	for _, e := range all {
		edit(e.v)
		if err := b.Put(e.k, e.v); err != nil {
			return err
		}
	}
	return nil
}
