package events

import (
	"encoding/base64"
	"fmt"
)

// TypeStoreKeyRecorded is the public half of the store's signing key
// (docs/fleet.md, "Signed histories"): fleet publish signs every event it
// sends with the private half, which never leaves the host's .tree-ring/,
// and a collector checks each message against this key before appending.
const TypeStoreKeyRecorded = "store.key_recorded"

// KeyAlgorithmEd25519 is the only signing algorithm (crypto/ed25519).
const KeyAlgorithmEd25519 = "ed25519"

func init() { register[StoreKeyRecorded](TypeStoreKeyRecorded, 1, StoreStream) }

// StoreKeyRecorded records the store's public signing key: its first key,
// the one a fleet file pins (collect and verify use the first one a store
// records; docs/fleet.md). Later keys are store.key_rotated events, each
// signed by the key before it.
type StoreKeyRecorded struct {
	StoreID   string `json:"store_id"`
	Algorithm string `json:"algorithm"`
	// PublicKey is the 32-byte ed25519 public key, standard base64.
	PublicKey string `json:"public_key"`
}

// Check bounds every field: a store id, the one algorithm, a 32-byte key.
func (p StoreKeyRecorded) Check() error {
	switch {
	case !uuidV4(p.StoreID):
		return fmt.Errorf("store_id %q is not a hyphenated lowercase version-4 UUID", p.StoreID)
	case p.Algorithm != KeyAlgorithmEd25519:
		return fmt.Errorf("algorithm %q is not %s", p.Algorithm, KeyAlgorithmEd25519)
	}
	if b, err := base64.StdEncoding.Strict().DecodeString(p.PublicKey); err != nil || len(b) != 32 {
		return fmt.Errorf("public_key %q is not 32 bytes of standard base64", p.PublicKey)
	}
	return nil
}

// TypeStoreKeyRotated replaces the store's signing key (tree-ring fleet
// rotate-key; docs/fleet.md, "Key rotation"): the events up to and
// including it are signed by the previous key, those after it by the new
// one. The previous key signs the rotation (so no one without it can
// rotate a store's key) and the new key signs it too (so no one can
// rotate to a key they do not hold).
const TypeStoreKeyRotated = "store.key_rotated"

func init() { register[StoreKeyRotated](TypeStoreKeyRotated, 1, StoreStream) }

// StoreKeyRotated names the store's new public key. PreviousSignature and
// Signature are the previous and the new key's ed25519 signatures of the
// rotation statement (fleetsign.RotationStatement: the store id, the
// previous and the new key), standard base64.
type StoreKeyRotated struct {
	StoreID           string `json:"store_id"`
	Algorithm         string `json:"algorithm"`
	PublicKey         string `json:"public_key"`
	PreviousKey       string `json:"previous_key"`
	PreviousSignature string `json:"previous_signature"`
	Signature         string `json:"signature"`
}

// Check bounds every field: a store id, the one algorithm, two 32-byte
// keys that differ, two 64-byte signatures.
func (p StoreKeyRotated) Check() error {
	if err := (StoreKeyRecorded{StoreID: p.StoreID, Algorithm: p.Algorithm, PublicKey: p.PublicKey}).Check(); err != nil {
		return err
	}
	if b, err := base64.StdEncoding.Strict().DecodeString(p.PreviousKey); err != nil || len(b) != 32 {
		return fmt.Errorf("previous_key %q is not 32 bytes of standard base64", p.PreviousKey)
	}
	if p.PreviousKey == p.PublicKey {
		return fmt.Errorf("public_key is the previous key")
	}
	for i, s := range []string{p.PreviousSignature, p.Signature} {
		if b, err := base64.StdEncoding.Strict().DecodeString(s); err != nil || len(b) != 64 {
			return fmt.Errorf("%s is not 64 bytes of standard base64", [2]string{"previous_signature", "signature"}[i])
		}
	}
	return nil
}
