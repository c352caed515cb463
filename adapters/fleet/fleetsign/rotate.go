package fleetsign

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"

	"github.com/tree-ring/tree-ring/adapters"
)

// The key files of a rotation (docs/fleet.md, "Key rotation"), beside
// KeyFile and like it 0600 and create-only:
const (
	// NextKeyFile holds a rotation's new key from before its
	// store.key_rotated is appended until the key replaces KeyFile: a
	// crash in between leaves the key the ledger may already name.
	NextKeyFile = "store.key.next"
	// PreviousKeyFile keeps the key a rotation replaced until fleet
	// publish has sent every event it signs (those up to and including the
	// rotation), then publish removes it.
	PreviousKeyFile = "store.key.previous"
)

// CreateNextKey makes a rotation's new key at NextKeyFile, create-only.
func CreateNextKey(root string, rand io.Reader) (ed25519.PrivateKey, error) {
	priv, err := createKeyFile(root, NextKeyFile, rand)
	var exists *adapters.ExistsError
	if errors.As(err, &exists) {
		return nil, fmt.Errorf("%s exists: an interrupted rotation; run the command again after any tree-ring command has finished it", NextKeyFile)
	}
	return priv, err
}

// LoadNextKey reads NextKeyFile; ok is false when there is none.
func LoadNextKey(root string) (ed25519.PrivateKey, bool, error) {
	return loadKeyFile(root, NextKeyFile)
}

// LoadPreviousKey reads PreviousKeyFile; ok is false when there is none.
func LoadPreviousKey(root string) (ed25519.PrivateKey, bool, error) {
	return loadKeyFile(root, PreviousKeyFile)
}

// PromoteNextKey finishes a rotation whose store.key_rotated is in the
// ledger: KeyFile's key is kept as PreviousKeyFile, NextKeyFile's
// replaces KeyFile (a rename over it), and NextKeyFile goes. Every step is
// safe to repeat after a crash; without NextKeyFile it does nothing.
func PromoteNextKey(root string) error {
	pr, err := openRoot(root)
	if err != nil {
		return err
	}
	defer pr.Close()
	next, err := pr.ReadFile(NextKeyFile, maxKeyFile)
	if err != nil || !next.Exists {
		return keyErr(NextKeyFile, err)
	}
	cur, err := pr.ReadFile(KeyFile, maxKeyFile)
	if err != nil {
		return keyErr(KeyFile, err)
	}
	if !cur.Exists {
		return fmt.Errorf("store key %s is missing while %s waits to replace it; restore it", KeyFile, NextKeyFile)
	}
	if !bytes.Equal(cur.Data, next.Data) {
		err = pr.CreateFile(PreviousKeyFile, cur.Data, 0o600, 0o700)
		var exists *adapters.ExistsError
		if errors.As(err, &exists) {
			prev, perr := pr.ReadFile(PreviousKeyFile, maxKeyFile)
			if perr != nil || !bytes.Equal(prev.Data, cur.Data) {
				return fmt.Errorf("store key %s holds another key than the one being rotated out", PreviousKeyFile)
			}
		} else if err != nil {
			return keyErr(PreviousKeyFile, err)
		}
		if err := pr.ReplaceFile(KeyFile, next.Data, 0o600, adapters.SHA256Hex(cur.Data)); err != nil {
			return keyErr(KeyFile, err)
		}
	}
	_, err = pr.RemoveFile(NextKeyFile)
	return keyErr(NextKeyFile, err)
}

// RemoveNextKey drops the new key of a rotation whose event never
// reached the ledger.
func RemoveNextKey(root string) error { return removeKeyFile(root, NextKeyFile) }

// RemovePreviousKey drops the previous key once nothing left to publish
// needs it.
func RemovePreviousKey(root string) error { return removeKeyFile(root, PreviousKeyFile) }

func removeKeyFile(root, name string) error {
	pr, err := openRoot(root)
	if err != nil {
		return err
	}
	defer pr.Close()
	_, err = pr.RemoveFile(name)
	return keyErr(name, err)
}
