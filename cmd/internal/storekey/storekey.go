// Package storekey keeps a store's fleet signing key and its record in
// the ledger together (docs/fleet.md, "Signed histories"): the private
// half in .tree-ring/store.key (fleetsign), the public half as the
// store's store.key_recorded event. tree-ring-fleet publish calls Ensure
// on first need; init may call it so a new store has its key from the
// start. The private key never enters the ledger.
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
// records (the key file was replaced or removed, or the ledger was copied
// to another host): it cannot sign its history until an operator
// restores the key. A store has one key for life (docs/fleet.md, "Signed
// histories": there is no rotation event).
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
	priv, have, err := fleetsign.LoadKey(root)
	if err != nil {
		return nil, err
	}
	rec, _, recorded, err := Recorded(ctx, st)
	if err != nil {
		return nil, err
	}
	switch {
	case recorded && !have:
		return nil, &MismatchError{Reason: fmt.Sprintf("the ledger records a key but %s is missing under the ledger root; restore it (nothing was signed)", fleetsign.KeyFile)}
	case recorded && !rec.Equal(priv.Public()):
		return nil, &MismatchError{Reason: fmt.Sprintf("%s is not the key the ledger records; restore the recorded one (nothing was signed)", fleetsign.KeyFile)}
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
	if rec, _, _, err = Recorded(ctx, st); err != nil {
		return nil, err
	}
	if !rec.Equal(priv.Public()) {
		return nil, &MismatchError{Reason: "another key was recorded meanwhile"}
	}
	return priv, nil
}
