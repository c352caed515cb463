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

// StoreKeyRecorded records the store's public signing key: the key its
// fleet messages are signed with, one for the store's life (collect and
// verify use the first one a store records; docs/fleet.md).
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
