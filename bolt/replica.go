package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/tree-ring/tree-ring/events"
)

// A replica is a ledger that holds another store's events verbatim: the same
// ids, versions, positions and hashes, so its chain is the original's chain
// and every read command and `audit verify` work on it (docs/fleet.md).
// Replicate is the only way events enter a replica; Append would re-chain
// them.

// ReplicaErrorKind classifies why an envelope cannot extend a replica.
type ReplicaErrorKind string

const (
	// ReplicaGap: the envelope's position is past head+1; the events in
	// between have not arrived (they may still, out of order).
	ReplicaGap ReplicaErrorKind = "gap"
	// ReplicaBrokenChain: the envelope is at head+1 but does not link to the
	// replica's head (prev_hash, stream version) or reuses an id.
	ReplicaBrokenChain ReplicaErrorKind = "broken-chain"
	// ReplicaConflict: the replica already holds other bytes at that
	// position.
	ReplicaConflict ReplicaErrorKind = "conflict"
	// ReplicaInvalid: the bytes are not a valid stored envelope (strict
	// decode, hash, canonical form).
	ReplicaInvalid ReplicaErrorKind = "invalid"
)

// ReplicaError is an envelope Replicate refused; nothing of it was written
// and the transaction is still usable. Position is 0 when the bytes did not
// decode far enough to tell.
type ReplicaError struct {
	Kind     ReplicaErrorKind
	Position uint64
	Detail   string
}

func (e *ReplicaError) Error() string {
	if e.Position == 0 {
		return fmt.Sprintf("replica refuses an event (%s): %s", e.Kind, e.Detail)
	}
	return fmt.Sprintf("replica refuses position %d (%s): %s", e.Position, e.Kind, e.Detail)
}

// ReplicaOutcome is what Replicate did with an envelope it accepted.
type ReplicaOutcome int

const (
	// ReplicaAppended: the envelope is now the replica's head.
	ReplicaAppended ReplicaOutcome = iota + 1
	// ReplicaDuplicate: the replica already held exactly these bytes at
	// that position (a redelivery); nothing was written.
	ReplicaDuplicate
)

// Replicate appends one stored envelope (the exact bytes of another
// ledger's events bucket) to this replica, keeping its id, version,
// position, prev_hash and hash. It must be the next event of the original
// chain: position head+1, prev_hash the replica's chain head, version the
// next of its stream, an id not seen yet. Bytes equal to what the replica
// already holds at their position are a duplicate. Anything else is a
// *ReplicaError, returned before anything is written. Projections fold the
// event as on Append.
func (t *Tx) Replicate(raw []byte) (ReplicaOutcome, error) {
	if t.err != nil {
		return 0, t.err
	}
	e, err := events.DecodeEnvelope(raw)
	if err != nil {
		var hm *events.HashMismatchError
		pos := uint64(0)
		if errors.As(err, &hm) {
			pos = hm.Position
		}
		return 0, &ReplicaError{Kind: ReplicaInvalid, Position: pos, Detail: err.Error()}
	}
	if !bytes.Equal(e.Encode(), raw) {
		return 0, &ReplicaError{Kind: ReplicaInvalid, Position: e.Position, Detail: "not in the canonical stored form"}
	}
	head := t.events.Sequence()
	switch {
	case e.Position <= head:
		if have, err := t.unpack.bytes(t.events.Get(u64(e.Position))); err == nil && bytes.Equal(have, raw) {
			return ReplicaDuplicate, nil
		}
		return 0, &ReplicaError{Kind: ReplicaConflict, Position: e.Position, Detail: "differs from the event the replica holds at this position"}
	case e.Position > head+1:
		return 0, &ReplicaError{Kind: ReplicaGap, Position: e.Position, Detail: fmt.Sprintf("the replica's head is position %d", head)}
	case e.PrevHash != t.head:
		return 0, &ReplicaError{Kind: ReplicaBrokenChain, Position: e.Position,
			Detail: fmt.Sprintf("prev_hash %.12s does not link to the replica's head %.12s", e.PrevHash, t.head)}
	}
	if _, dup, err := t.lookupID(e.ID); err != nil {
		return 0, err
	} else if dup {
		return 0, &ReplicaError{Kind: ReplicaBrokenChain, Position: e.Position, Detail: fmt.Sprintf("event id %s is already in the replica", e.ID)}
	}
	h := t.streamHead(e.Stream)
	if e.Version != h.version+1 {
		return 0, &ReplicaError{Kind: ReplicaBrokenChain, Position: e.Position,
			Detail: fmt.Sprintf("stream %s version %d, the replica's stream is at %d", e.Stream, e.Version, h.version)}
	}
	// Writes: a failure from here on poisons the transaction.
	if err := t.writeReplica(&e, raw, h); err != nil {
		t.err = err
		return 0, err
	}
	return ReplicaAppended, nil
}

func (t *Tx) writeReplica(e *events.Envelope, raw []byte, h head) error {
	t.wrote = true
	pos, err := t.events.NextSequence()
	if err != nil {
		return fmt.Errorf("replicate position %d: next sequence: %w", e.Position, err)
	}
	if pos != e.Position {
		return fmt.Errorf("replicate position %d: the events sequence gave %d", e.Position, pos)
	}
	if err := t.events.Put(u64(pos), t.storedValue(raw)); err != nil {
		return fmt.Errorf("replicate position %d: %w", pos, err)
	}
	if err := t.pending.add(e.Stream, e.Version, e.ID, pos); err != nil {
		return fmt.Errorf("replicate position %d: %w", pos, err)
	}
	if err := t.apply(e); err != nil {
		return fmt.Errorf("replicate position %d: %w", pos, err)
	}
	t.head = e.Hash
	t.moveHead(e.Stream, head{version: e.Version, position: pos})
	return nil
}

// ReplicaBatch is what Store.Replicate did with a batch.
type ReplicaBatch struct {
	Appended   int
	Duplicates int
	// Refused is the first envelope that could not extend the replica, at
	// index Appended+Duplicates of the batch; nil when all were accepted.
	// The envelopes after it were not looked at.
	Refused *ReplicaError
}

// Replicate applies raws in order in one write transaction (one commit for
// the batch), stopping at the first envelope the replica refuses; what was
// accepted before it is committed. The error is for the store itself
// (disk, a poisoned transaction), after which nothing of the batch is kept.
func (s *Store) Replicate(ctx context.Context, raws [][]byte) (ReplicaBatch, error) {
	var res ReplicaBatch
	err := s.Update(ctx, func(tx *Tx) error {
		res = ReplicaBatch{}
		for _, raw := range raws {
			out, err := tx.Replicate(raw)
			var re *ReplicaError
			switch {
			case errors.As(err, &re):
				res.Refused = re
				return nil
			case err != nil:
				return err
			case out == ReplicaAppended:
				res.Appended++
			default:
				res.Duplicates++
			}
		}
		return nil
	})
	if err != nil {
		return ReplicaBatch{}, err
	}
	return res, nil
}
