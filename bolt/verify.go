package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/projections"
	bbolt "go.etcd.io/bbolt"
)

// VerifyReport summarizes a passing verification.
type VerifyReport struct {
	Events      uint64   `json:"events"`
	Streams     int      `json:"streams"`
	ChainHead   string   `json:"chain_head"`
	Projections []string `json:"projections"`
}

// Verify checks, in one read snapshot: bbolt's own page consistency; that
// positions run 1..N without gaps; that every envelope decodes, sits at its
// key, validates against the catalogue, links to the previous hash and
// hashes to its own hash; that the streams, ids and heads indexes agree with
// the events; that the chain head is the last hash; and that every
// projection equals a fresh in-memory re-fold up to its checkpoint. The
// first failure is returned as *VerifyError naming the position or the
// projection.
func (s *Store) Verify(ctx context.Context) (VerifyReport, error) {
	var rep VerifyReport
	err := s.view(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			return &VerifyError{Detail: "bbolt consistency check: " + err.Error()}
		}
		evb, streams, ids := tx.Bucket(bucketEvents), tx.Bucket(bucketStreams), tx.Bucket(bucketIDs)
		cps := make([]uint64, len(s.projs))
		mems := make([]projections.KV, len(s.projs))
		for i, p := range s.projs {
			v, pos, ok := projectionCheckpoint(tx, p.Name())
			if ok && v != p.Version() {
				return &VerifyError{Projection: p.Name(), Detail: fmt.Sprintf("stored at version %d, code is at %d (run `tree-ring projections rebuild`)", v, p.Version())}
			}
			cps[i] = pos
			mems[i] = projections.NewMemKV()
		}
		// Folding uses "pos <= cps[i]" to skip; invert: fold while pos <= checkpoint.
		skip := make([]uint64, len(s.projs))
		bod := bodies{tx.Bucket(bucketBodies)}
		prev := events.GenesisHash
		versions := map[string]uint64{}
		var want uint64 = 1
		c := evb.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if want%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			pos := binary.BigEndian.Uint64(k)
			if len(k) != 8 || pos != want {
				return &VerifyError{Position: want, Detail: fmt.Sprintf("gap: next stored position is %d", pos)}
			}
			e, err := events.DecodeStored(v)
			if err != nil {
				return &VerifyError{Position: pos, Detail: err.Error()}
			}
			if !bytes.Equal(e.Encode(), v) {
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
			versions[e.Stream]++
			if e.Version != versions[e.Stream] {
				return &VerifyError{Position: pos, Detail: fmt.Sprintf("stream %s version %d, expected %d", e.Stream, e.Version, versions[e.Stream])}
			}
			if sp := streams.Get(streamKey(e.Stream, e.Version)); len(sp) != 8 || binary.BigEndian.Uint64(sp) != pos {
				return &VerifyError{Position: pos, Detail: fmt.Sprintf("streams index for %s@%d does not point here", e.Stream, e.Version)}
			}
			if ip := ids.Get(e.ID[:]); len(ip) != 8 || binary.BigEndian.Uint64(ip) != pos {
				return &VerifyError{Position: pos, Detail: fmt.Sprintf("ids index for %s does not point here", e.ID)}
			}
			for i := range skip {
				// Re-fold only up to each projection's checkpoint.
				if pos > cps[i] {
					skip[i] = pos
				} else {
					skip[i] = 0
				}
			}
			if err := foldOne(s.projs, mems, skip, bod, pos, v); err != nil {
				return &VerifyError{Position: pos, Detail: err.Error()}
			}
			prev = e.Hash
			want++
		}
		n := want - 1
		if seq := evb.Sequence(); seq != n {
			return &VerifyError{Position: n + 1, Detail: fmt.Sprintf("sequence says %d events, found %d", seq, n)}
		}
		if h := string(tx.Bucket(bucketMeta).Get(keyChainHead)); h != prev {
			return &VerifyError{Detail: fmt.Sprintf("chain head %.12s is not the last hash %.12s", h, prev)}
		}
		if got, want := streams.Stats().KeyN, int(n); got != want {
			return &VerifyError{Detail: fmt.Sprintf("streams index has %d entries for %d events", got, want)}
		}
		if got, want := ids.Stats().KeyN, int(n); got != want {
			return &VerifyError{Detail: fmt.Sprintf("ids index has %d entries for %d events", got, want)}
		}
		heads := tx.Bucket(bucketHeads)
		if heads.Stats().KeyN != len(versions) {
			return &VerifyError{Detail: fmt.Sprintf("heads has %d streams, events have %d", heads.Stats().KeyN, len(versions))}
		}
		for st, ver := range versions {
			if h := getHead(tx, st); h.version != ver {
				return &VerifyError{Detail: fmt.Sprintf("head of %s says version %d, events say %d", st, h.version, ver)}
			}
		}
		for i, p := range s.projs {
			if err := compareProjection(p.Name(), tx.Bucket(projBucket(p.Name())), mems[i].(*projections.MemKV)); err != nil {
				return err
			}
			rep.Projections = append(rep.Projections, p.Name())
		}
		rep.Events, rep.Streams, rep.ChainHead = n, len(versions), prev
		return nil
	})
	return rep, err
}

func compareProjection(name string, b *bbolt.Bucket, mem *projections.MemKV) error {
	keys := mem.Keys()
	i := 0
	if b != nil {
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
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
