package fleetsign

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/tree-ring/tree-ring/events"
)

// rotationPrefix is the domain separation of a key rotation's signed
// bytes: never an event statement, never anything else.
const rotationPrefix = "tree-ring store key rotation v1\n"

// RotationStatement is the bytes both keys of a rotation sign: the store,
// the previous key and the new key.
func RotationStatement(storeID string, previous, next ed25519.PublicKey) []byte {
	b := make([]byte, 0, len(rotationPrefix)+36+2*45)
	b = append(b, rotationPrefix...)
	b = append(b, storeID...)
	b = append(b, '\n')
	b = append(b, EncodeKey(previous)...)
	b = append(b, '\n')
	return append(b, EncodeKey(next)...)
}

// Rotation is the store.key_rotated payload that moves storeID from the
// previous key to next, signed by both.
func Rotation(storeID string, previous, next ed25519.PrivateKey) events.StoreKeyRotated {
	prevPub, nextPub := previous.Public().(ed25519.PublicKey), next.Public().(ed25519.PublicKey)
	st := RotationStatement(storeID, prevPub, nextPub)
	return events.StoreKeyRotated{
		StoreID: storeID, Algorithm: events.KeyAlgorithmEd25519,
		PublicKey: EncodeKey(nextPub), PreviousKey: EncodeKey(prevPub),
		PreviousSignature: base64.StdEncoding.EncodeToString(ed25519.Sign(previous, st)),
		Signature:         base64.StdEncoding.EncodeToString(ed25519.Sign(next, st)),
	}
}

// ErrNotPreviousKey is a rotation the store's key in force did not sign
// (or that names another previous key).
var ErrNotPreviousKey = errors.New("the key rotation is not signed by the store's previous key")

// Chain is a store's keys in the order its ledger records them: Keys[0]
// (store.key_recorded) signs every position up to and including
// Rotations[0], Keys[1] the positions after it up to Rotations[1], and so
// on. The zero Chain knows no key.
type Chain struct {
	Keys      []ed25519.PublicKey
	Rotations []uint64 // the positions of the store.key_rotated events
}

// Known reports whether the chain has a key.
func (c Chain) Known() bool { return len(c.Keys) > 0 }

// First is the store's first key, the one a fleet file pins.
func (c Chain) First() ed25519.PublicKey { return c.Keys[0] }

// Current is the key the store signs its next events with.
func (c Chain) Current() ed25519.PublicKey { return c.Keys[len(c.Keys)-1] }

// At is the key that signs the event at position.
func (c Chain) At(position uint64) ed25519.PublicKey {
	for i, r := range c.Rotations {
		if position <= r {
			return c.Keys[i]
		}
	}
	return c.Current()
}

// Rotate checks a store.key_rotated at position against the key in
// force and moves the chain to its new key: the rotation must name the
// key in force as its previous key, be signed by it and by the new key.
func (c *Chain) Rotate(storeID string, position uint64, p *events.StoreKeyRotated) error {
	if !c.Known() {
		return errors.New("a key rotation before the store records a key")
	}
	prev, err := DecodeKey(p.PreviousKey)
	if err != nil || !prev.Equal(c.Current()) {
		return ErrNotPreviousKey
	}
	next, err := DecodeKey(p.PublicKey)
	if err != nil {
		return err
	}
	st := RotationStatement(storeID, prev, next)
	if !verifyRaw(prev, st, p.PreviousSignature) {
		return ErrNotPreviousKey
	}
	if !verifyRaw(next, st, p.Signature) {
		return errors.New("the key rotation is not signed by its new key")
	}
	c.Keys = append(c.Keys, next)
	c.Rotations = append(c.Rotations, position)
	return nil
}

// Fold adds one store-stream event to the chain: the first
// store.key_recorded is the first key (a later one changes nothing), each
// store.key_rotated is checked (Rotate). Other events are ignored.
func (c *Chain) Fold(storeID string, e *events.Envelope) error {
	switch e.Type {
	case events.TypeStoreKeyRecorded:
		if c.Known() {
			return nil
		}
		p, err := events.Payload[events.StoreKeyRecorded](e)
		if err != nil {
			return &ChainError{Position: e.Position, Err: err}
		}
		k, err := DecodeKey(p.PublicKey)
		if err != nil {
			return &ChainError{Position: e.Position, Err: err}
		}
		c.Keys = []ed25519.PublicKey{k}
	case events.TypeStoreKeyRotated:
		p, err := events.Payload[events.StoreKeyRotated](e)
		if err == nil {
			err = c.Rotate(storeID, e.Position, p)
		}
		if err != nil {
			return &ChainError{Position: e.Position, Err: err}
		}
	}
	return nil
}

// ChainError is a key record or rotation that does not check, at its
// position.
type ChainError struct {
	Position uint64
	Err      error
}

func (e *ChainError) Error() string { return fmt.Sprintf("position %d: %v", e.Position, e.Err) }
func (e *ChainError) Unwrap() error { return e.Err }

func verifyRaw(pub ed25519.PublicKey, msg []byte, sig string) bool {
	b, err := base64.StdEncoding.Strict().DecodeString(sig)
	return err == nil && len(b) == ed25519.SignatureSize && ed25519.Verify(pub, msg, b)
}
