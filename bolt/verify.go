package bolt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/fold"
	bbolt "go.etcd.io/bbolt"
)

// VerifyReport summarizes a passing verification.
type VerifyReport struct {
	Events      uint64   `json:"events"`
	Streams     int      `json:"streams"`
	Bodies      int      `json:"bodies"`
	ChainHead   string   `json:"chain_head"`
	Projections []string `json:"projections"`
}

// Verify checks, in one read snapshot:
//
//   - bbolt's own page consistency (tx.Check) and both meta pages
//     (checkMetas: a damaged newest meta is a lost last commit);
//   - positions run 1..N without gaps and the sequence is N;
//   - every envelope decodes, is in canonical form, sits at its key,
//     validates against the catalogue, links to the previous hash and hashes
//     to its own hash; stream versions run 1..n per stream;
//   - the streams, ids and heads indexes agree with the events, entry for
//     entry, and the chain head is the last hash;
//   - every memory body hashes to its key;
//   - every registered projection equals a fresh in-memory re-fold of the
//     events up to its checkpoint (and the checkpoint is not past the head).
//
// The first failure is returned as *VerifyError naming the position or the
// projection. Verify reads every event once; it holds one read transaction
// for the whole walk.
func (s *Store) Verify(ctx context.Context) (VerifyReport, error) {
	return s.VerifyProgress(ctx, func(uint64, uint64) {})
}

// VerifyProgress is Verify reporting the events checked of the head every
// 4,096 events (progress must not be nil).
func (s *Store) VerifyProgress(ctx context.Context, progress Progress) (VerifyReport, error) {
	var rep VerifyReport
	err := s.view(func(tx *bbolt.Tx) error {
		// Drain the whole channel: returning early would leave bbolt's
		// checker goroutine blocked on a send.
		var first error
		for err := range tx.Check() {
			if first == nil {
				first = err
			}
		}
		if first != nil {
			return &VerifyError{Detail: "bbolt consistency check: " + first.Error()}
		}
		if err := checkLayout(s.path, tx); err != nil {
			return &VerifyError{Detail: err.Error()}
		}
		if err := checkMetas(s.path, tx); err != nil {
			return err
		}
		evb, streams := tx.Bucket(bucketEvents), tx.Bucket(bucketStreamBlocks)
		ids := idIndex{b: tx.Bucket(bucketIDBlocks)}
		head := evb.Sequence()
		upto := make([]uint64, len(s.projs)) // re-fold events (0, checkpoint]
		mems := make([]*fold.MemKV, len(s.projs))
		kvs := make([]fold.KV, len(s.projs))
		for i, p := range s.projs {
			v, pos, ok := projectionCheckpoint(tx, p.Name())
			if ok && v != p.Version() {
				return &VerifyError{Projection: p.Name(), Detail: fmt.Sprintf("stored at version %d, code is at %d (run `tree-ring projections rebuild`)", v, p.Version())}
			}
			if pos > head {
				return &VerifyError{Projection: p.Name(), Detail: fmt.Sprintf("checkpoint %d is past the last position %d", pos, head)}
			}
			upto[i] = pos
			mems[i] = fold.NewMemKV()
			kvs[i] = mems[i]
		}
		from := make([]uint64, len(s.projs))
		bod := &foldBodies{b: tx.Bucket(bucketBodies)}
		prev := events.GenesisHash
		type streamState struct{ version, position uint64 }
		seen := map[string]*streamState{}
		var want uint64 = 1
		var scratch events.Envelope
		var strs events.StringCache
		var buf eventBuf // e and the folds read an event before the next
		c := evb.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if want%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
				progress(want, head)
			}
			if len(k) != 8 {
				return &VerifyError{Position: want, Detail: fmt.Sprintf("events bucket holds a key of %d bytes", len(k))}
			}
			pos := binary.BigEndian.Uint64(k)
			if pos != want {
				return &VerifyError{Position: want, Detail: fmt.Sprintf("gap: next stored position is %d", pos)}
			}
			raw, err := buf.bytes(v)
			if err != nil {
				return &VerifyError{Position: pos, Detail: err.Error()}
			}
			e, err := events.DecodeStoredRef(raw)
			if err != nil {
				return &VerifyError{Position: pos, Detail: err.Error()}
			}
			if !bytes.Equal(e.Encode(), raw) {
				return &VerifyError{Position: pos, Detail: "stored bytes are not in canonical form"}
			}
			if e.Position != pos {
				return &VerifyError{Position: pos, Detail: fmt.Sprintf("envelope says position %d", e.Position)}
			}
			if e.PrevHash != prev {
				return &VerifyError{Position: pos, Detail: fmt.Sprintf("prev_hash %.12s does not link to the previous hash %.12s", e.PrevHash, prev)}
			}
			if h := e.ComputeHash(); h != e.Hash {
				return &VerifyError{Position: pos, Detail: fmt.Sprintf("content hashes to %.12s, recorded hash is %.12s", h, e.Hash)}
			}
			if err := e.Validate(); err != nil {
				return &VerifyError{Position: pos, Detail: err.Error()}
			}
			st := seen[e.Stream]
			if st == nil {
				st = &streamState{}
				seen[e.Stream] = st
			}
			st.version++
			st.position = pos
			if e.Version != st.version {
				return &VerifyError{Position: pos, Detail: fmt.Sprintf("stream %s version %d, expected %d", e.Stream, e.Version, st.version)}
			}
			if sp, ok, err := streamPosition(streams, e.Stream, e.Version); err != nil {
				return &VerifyError{Position: pos, Detail: "streams index: " + err.Error()}
			} else if !ok || sp != pos {
				return &VerifyError{Position: pos, Detail: fmt.Sprintf("streams index for %s@%d does not point here", e.Stream, e.Version)}
			}
			if ip, ok, err := ids.get(e.ID[:]); err != nil {
				return &VerifyError{Position: pos, Detail: "ids index: " + err.Error()}
			} else if !ok || ip != pos {
				return &VerifyError{Position: pos, Detail: fmt.Sprintf("ids index for %s does not point here", e.ID)}
			}
			if err := foldOne(s.projs, kvs, from, upto, bod, pos, raw, &scratch, &strs); err != nil {
				return &VerifyError{Position: pos, Detail: err.Error()}
			}
			prev = e.Hash
			want++
		}
		n := want - 1
		if head != n {
			return &VerifyError{Position: n + 1, Detail: fmt.Sprintf("sequence says %d events, found %d", head, n)}
		}
		if h := string(tx.Bucket(bucketMeta).Get(keyChainHead)); h != prev {
			return &VerifyError{Detail: fmt.Sprintf("chain head %.12s is not the last hash %.12s", h, prev)}
		}
		// Every event was found in both indexes above, each in its own
		// slot; well-formed blocks holding exactly n entries each mean
		// there is nothing else in them.
		if got, err := countIndexEntries(streams, true); err != nil {
			return &VerifyError{Detail: "streams index: " + err.Error()}
		} else if got != n {
			return &VerifyError{Detail: fmt.Sprintf("streams index has %d entries for %d events", got, n)}
		}
		if got, err := countIndexEntries(ids.b, false); err != nil {
			return &VerifyError{Detail: "ids index: " + err.Error()}
		} else if got != n {
			return &VerifyError{Detail: fmt.Sprintf("ids index has %d entries for %d events", got, n)}
		}
		heads := tx.Bucket(bucketHeads)
		if got := heads.Stats().KeyN; got != len(seen) {
			return &VerifyError{Detail: fmt.Sprintf("heads has %d streams, events have %d", got, len(seen))}
		}
		for name, st := range seen {
			if h := getHead(heads, name); h.version != st.version || h.position != st.position {
				return &VerifyError{Detail: fmt.Sprintf("head of %s says version %d at position %d, events say %d at %d", name, h.version, h.position, st.version, st.position)}
			}
		}
		nb, err := verifyBodies(tx.Bucket(bucketBodies))
		if err != nil {
			return err
		}
		for i, p := range s.projs {
			if err := compareProjection(p.Name(), tx.Bucket(projBucket(p.Name())), mems[i]); err != nil {
				return err
			}
			rep.Projections = append(rep.Projections, p.Name())
		}
		rep.Events, rep.Streams, rep.Bodies, rep.ChainHead = n, len(seen), nb, prev
		return nil
	})
	return rep, err
}

// verifyBodies checks that every body is stored under its own SHA-256.
func verifyBodies(b *bbolt.Bucket) (int, error) {
	n := 0
	err := b.ForEach(func(k, v []byte) error {
		sum := sha256.Sum256(v)
		if hex.EncodeToString(sum[:]) != string(k) {
			return &VerifyError{Detail: fmt.Sprintf("memory body %.12s does not hash to its key", k)}
		}
		n++
		return nil
	})
	return n, err
}

func compareProjection(name string, b *bbolt.Bucket, mem *fold.MemKV) error {
	keys := mem.Keys()
	i := 0
	if b != nil {
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil {
				return &VerifyError{Projection: name, Detail: fmt.Sprintf("stored key %q is a nested bucket", k)}
			}
			if i >= len(keys) || keys[i] > string(k) {
				return &VerifyError{Projection: name, Detail: fmt.Sprintf("stored key %q is not produced by the events", k)}
			}
			if keys[i] < string(k) {
				return &VerifyError{Projection: name, Detail: fmt.Sprintf("key %q is missing from the stored projection", keys[i])}
			}
			if !bytes.Equal(mem.Get(k), v) {
				return &VerifyError{Projection: name, Detail: fmt.Sprintf("value of key %q differs", k)}
			}
			i++
		}
	}
	if i < len(keys) {
		return &VerifyError{Projection: name, Detail: fmt.Sprintf("key %q is missing from the stored projection", keys[i])}
	}
	return nil
}

// countIndexEntries checks every block of an index bucket and counts the
// entries they hold.
func countIndexEntries(b *bbolt.Bucket, streams bool) (uint64, error) {
	var n uint64
	var prevLast []byte // ids: the last id of the previous block
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if streams {
			_, _, ps, err := decodeStreamBlock(k, v)
			if err != nil {
				return 0, err
			}
			n += uint64(len(ps) / 8)
			continue
		}
		blk, err := decodeIDBlock(k, v)
		if err != nil {
			return 0, err
		}
		if prevLast != nil && bytes.Compare(prevLast, k) >= 0 {
			return 0, fmt.Errorf("%w: id block %x overlaps the one before it", errBlock, k)
		}
		prevLast = blk.id(blk.n() - 1)
		n += uint64(blk.n())
	}
	return n, nil
}
