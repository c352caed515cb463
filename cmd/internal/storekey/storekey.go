// Package storekey keeps a store's fleet signing keys and their record in
// the ledger together (docs/fleet.md, "Signed histories", "Key
// rotation"): the private half in .tree-ring/store.key (fleetsign), the
// public half as the store's store.key_recorded event, and each later key
// as a store.key_rotated signed by the key before it (Rotate).
// tree-ring-fleet publish calls Ensure on first need; init calls it so a
// new store has its key from the start. No private key enters the ledger.
package storekey

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/tree-ring/tree-ring/adapters/fleet/fleetsign"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/events"
)

// Recorded returns the store's recorded public key: the first
// store.key_recorded of the ledger (position is its position); ok is false
// when the store has none.
func Recorded(ctx context.Context, st *bolt.Store) (pub ed25519.PublicKey, position uint64, ok bool, err error) {
	errFound := errors.New("found")
	err = st.ReadStream(ctx, events.StoreStream, 0, func(e *events.Envelope) error {
		if e.Type != events.TypeStoreKeyRecorded {
			return nil
		}
		p, err := events.Payload[events.StoreKeyRecorded](e)
		if err != nil {
			return fmt.Errorf("position %d: %w", e.Position, err)
		}
		if pub, err = fleetsign.DecodeKey(p.PublicKey); err != nil {
			return fmt.Errorf("position %d: %w", e.Position, err)
		}
		position = e.Position
		return errFound
	})
	if errors.Is(err, errFound) {
		return pub, position, true, nil
	}
	return nil, 0, false, err
}

// MismatchError is a store whose key file is not the key its ledger
// has in force (the key file was replaced or removed, or the ledger was
// copied to another host): it cannot sign its history until an operator
// restores the key. A key changes only by a recorded rotation (Rotate).
type MismatchError struct{ Reason string }

func (e *MismatchError) Error() string { return "store key: " + e.Reason }

// Ensure returns the store's id and private key, creating the key (0600,
// under root) and recording its public half (store.key_recorded on the
// store stream, by f) when the store has neither. st is open for writing
// on root's initialized ledger. Safe to call again: when both exist and
// agree it writes nothing.
func Ensure(ctx context.Context, root string, st *bolt.Store, f *events.Factory) (string, ed25519.PrivateKey, error) {
	storeID, err := StoreID(st)
	if err != nil {
		return "", nil, err
	}
	priv, err := ensure(ctx, root, st, f, storeID)
	return storeID, priv, err
}

// StoreID is the store.initialized id of an open ledger; an uninitialized
// one is an error naming init.
func StoreID(st *bolt.Store) (string, error) {
	var id string
	err := st.View(func(r *bolt.Reader) error {
		ms, ok, err := cli.StoreIdentity(r)
		if err == nil && !ok {
			err = fmt.Errorf("%s: the store is not initialized (run `tree-ring init`)", st.Path())
		}
		id = ms.StoreID
		return err
	})
	return id, err
}

func ensure(ctx context.Context, root string, st *bolt.Store, f *events.Factory, storeID string) (ed25519.PrivateKey, error) {
	if err := settle(ctx, root, st, storeID); err != nil {
		return nil, err
	}
	priv, have, err := fleetsign.LoadKey(root)
	if err != nil {
		return nil, err
	}
	chain, err := Chain(ctx, st, storeID)
	if err != nil {
		return nil, err
	}
	recorded := chain.Known()
	switch {
	case recorded && !have:
		return nil, &MismatchError{Reason: fmt.Sprintf("the ledger records a key but %s is missing under the ledger root; restore it (nothing was signed)", fleetsign.KeyFile)}
	case recorded && !chain.Current().Equal(priv.Public()):
		return nil, &MismatchError{Reason: fmt.Sprintf("%s is not the key the ledger has in force; restore that one (nothing was signed)", fleetsign.KeyFile)}
	case recorded:
		return priv, nil
	}
	if !have {
		if priv, err = fleetsign.CreateKey(root, rand.Reader); err != nil {
			return nil, err
		}
	}
	e, err := f.New(events.StoreStream, events.TypeStoreKeyRecorded, &events.StoreKeyRecorded{
		StoreID: storeID, Algorithm: events.KeyAlgorithmEd25519, PublicKey: fleetsign.EncodeKey(priv.Public().(ed25519.PublicKey)),
	})
	if err != nil {
		return nil, err
	}
	err = st.Update(ctx, func(tx *bolt.Tx) error {
		_, err := tx.Append(events.StoreStream, int64(tx.StreamVersion(events.StoreStream)), e)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("record the store key: %w", err)
	}
	// Another writer may have recorded a key between the read and the
	// append (each under the write lock): the first record is the key.
	rec, _, _, err := Recorded(ctx, st)
	if err != nil {
		return nil, err
	}
	if !rec.Equal(priv.Public()) {
		return nil, &MismatchError{Reason: "another key was recorded meanwhile"}
	}
	return priv, nil
}

// Chain is the store's keys as its ledger records them: the first
// store.key_recorded and every store.key_rotated after it, each rotation
// checked against the key before it (fleetsign.Chain.Fold). A rotation
// that does not check is an error naming its position.
func Chain(ctx context.Context, st *bolt.Store, storeID string) (fleetsign.Chain, error) {
	var c fleetsign.Chain
	err := st.ReadStream(ctx, events.StoreStream, 0, func(e *events.Envelope) error {
		return c.Fold(storeID, e)
	})
	return c, err
}

// settle finishes or abandons a rotation a crash interrupted (a
// fleetsign.NextKeyFile left behind): when the ledger has its key in
// force the rotation happened and the key takes its place; otherwise its
// event never committed and the file goes. st is open for writing, so no
// rotation is under way meanwhile.
func settle(ctx context.Context, root string, st *bolt.Store, storeID string) error {
	next, ok, err := fleetsign.LoadNextKey(root)
	if err != nil || !ok {
		return err
	}
	chain, err := Chain(ctx, st, storeID)
	if err != nil {
		return err
	}
	if chain.Known() && chain.Current().Equal(next.Public()) {
		return fleetsign.PromoteNextKey(root)
	}
	return fleetsign.RemoveNextKey(root)
}

// Rotated is what Rotate did.
type Rotated struct {
	StoreID  string
	Position uint64 // of the store.key_rotated event
	Key      ed25519.PublicKey
}

// Rotate replaces the store's signing key by a new one, recorded: the new
// key is written create-only beside the current one, a store.key_rotated
// naming it and signed by both keys is appended, then the new key
// replaces store.key and the old one is kept as store.key.previous until
// fleet publish has sent every event it signs (Signer.Retire). A crash
// at any step is finished or undone by the next write open (settle).
// Refused while a previous key is still kept: publish first. st is open
// for writing on root's initialized ledger.
func Rotate(ctx context.Context, root string, st *bolt.Store, f *events.Factory) (Rotated, error) {
	storeID, cur, err := Ensure(ctx, root, st, f)
	if err != nil {
		return Rotated{}, err
	}
	if _, kept, err := fleetsign.LoadPreviousKey(root); err != nil || kept {
		if err == nil {
			err = fmt.Errorf("the key of the last rotation is still kept (%s) until fleet publish sends the events it signs: publish, then rotate again", fleetsign.PreviousKeyFile)
		}
		return Rotated{}, err
	}
	next, err := fleetsign.CreateNextKey(root, rand.Reader)
	if err != nil {
		return Rotated{}, err
	}
	p := fleetsign.Rotation(storeID, cur, next)
	e, err := f.New(events.StoreStream, events.TypeStoreKeyRotated, &p)
	if err != nil {
		return Rotated{}, errors.Join(err, fleetsign.RemoveNextKey(root))
	}
	var pos uint64
	err = st.Update(ctx, func(tx *bolt.Tx) error {
		ps, err := tx.Append(events.StoreStream, int64(tx.StreamVersion(events.StoreStream)), e)
		if err == nil {
			pos = ps[0]
		}
		return err
	})
	if err != nil {
		return Rotated{}, fmt.Errorf("record the key rotation: %w", errors.Join(err, settle(ctx, root, st, storeID)))
	}
	if err := fleetsign.PromoteNextKey(root); err != nil {
		return Rotated{}, fmt.Errorf("the rotation is recorded at position %d; finishing its key files: %w (the next tree-ring write finishes it)", pos, err)
	}
	return Rotated{StoreID: storeID, Position: pos, Key: next.Public().(ed25519.PublicKey)}, nil
}

// Signer signs each event with the key in force at its position: the
// current key, or the previous one for events up to the last rotation
// while it is kept.
type Signer struct {
	StoreID           string
	Chain             fleetsign.Chain
	current, previous ed25519.PrivateKey
}

// LoadSigner reads the store's keys for publishing (st may be read-only).
// ok is false when the store needs a write first (no key yet, or an
// interrupted rotation to settle): Ensure, then load again.
func LoadSigner(ctx context.Context, root string, st *bolt.Store, storeID string) (s *Signer, ok bool, err error) {
	if _, pending, err := fleetsign.LoadNextKey(root); err != nil || pending {
		return nil, false, err
	}
	chain, err := Chain(ctx, st, storeID)
	if err != nil {
		return nil, false, err
	}
	cur, have, err := fleetsign.LoadKey(root)
	if err != nil || !have || !chain.Known() {
		return nil, false, err
	}
	if !chain.Current().Equal(cur.Public()) {
		return nil, false, &MismatchError{Reason: fmt.Sprintf("%s is not the key the ledger has in force; restore that one (nothing was signed)", fleetsign.KeyFile)}
	}
	s = &Signer{StoreID: storeID, Chain: chain, current: cur}
	if n := len(chain.Keys); n > 1 {
		prev, kept, err := fleetsign.LoadPreviousKey(root)
		if err != nil {
			return nil, false, err
		}
		if kept && prev.Public().(ed25519.PublicKey).Equal(chain.Keys[n-2]) {
			s.previous = prev
		}
	}
	return s, true, nil
}

// Sign returns the signature of the event at position (with hash) and
// the public key that made it. An event signed by a key no longer on
// this host is an error: it was rotated out before that event was
// published.
func (s *Signer) Sign(position uint64, hash string) (string, string, error) {
	want := s.Chain.At(position)
	for _, k := range []ed25519.PrivateKey{s.current, s.previous} {
		if k != nil && want.Equal(k.Public()) {
			return fleetsign.Sign(k, s.StoreID, position, hash), fleetsign.EncodeKey(want), nil
		}
	}
	return "", "", fmt.Errorf("position %d is signed by a key this store rotated out and no longer keeps (%s was removed); it cannot be published", position, fleetsign.PreviousKeyFile)
}

// Retire removes the previous key once the stream holds the last
// rotation (streamHead, the stream's last position for the store): no
// event left to publish needs it.
func (s *Signer) Retire(root string, streamHead uint64) error {
	n := len(s.Chain.Rotations)
	if s.previous == nil || n == 0 || streamHead < s.Chain.Rotations[n-1] {
		return nil
	}
	s.previous = nil
	return fleetsign.RemovePreviousKey(root)
}

// Label is the store's newest store.labeled label; ok is false when it
// has none.
func Label(ctx context.Context, st *bolt.Store) (label string, ok bool, err error) {
	err = st.ReadStream(ctx, events.StoreStream, 0, func(e *events.Envelope) error {
		if e.Type != events.TypeStoreLabeled {
			return nil
		}
		p, err := events.Payload[events.StoreLabeled](e)
		if err != nil {
			return fmt.Errorf("position %d: %w", e.Position, err)
		}
		label, ok = p.Label, true
		return nil
	})
	return label, ok, err
}

// SetLabel records label (cleaned: fleetsign.CleanLabel) as the store's
// label, unless it is already; changed tells whether an event was
// appended. st is open for writing.
func SetLabel(ctx context.Context, st *bolt.Store, f *events.Factory, label string) (clean string, changed bool, err error) {
	storeID, err := StoreID(st)
	if err != nil {
		return "", false, err
	}
	clean = fleetsign.CleanLabel(label)
	if have, ok, err := Label(ctx, st); err != nil || (ok && have == clean) {
		return clean, false, err
	}
	e, err := f.New(events.StoreStream, events.TypeStoreLabeled, &events.StoreLabeled{StoreID: storeID, Label: clean})
	if err != nil {
		return "", false, err
	}
	err = st.Update(ctx, func(tx *bolt.Tx) error {
		_, err := tx.Append(events.StoreStream, int64(tx.StreamVersion(events.StoreStream)), e)
		return err
	})
	return clean, err == nil, err
}
