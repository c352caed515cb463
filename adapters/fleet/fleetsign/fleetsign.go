// Package fleetsign is what makes a fleet history trustworthy
// (docs/fleet.md, "Signed histories"): each store's ed25519 key pair, the
// private half in a 0600 file under the ledger root that nothing ever
// reads out, the statement a publisher signs for each event, and the
// fleet file of expected stores an auditor pins keys with. It knows no
// network and no ledger, so tree-ring (verify, identity) and
// tree-ring-fleet (publish, collect) share it without nats.go.
package fleetsign

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/tree-ring/tree-ring/adapters"
)

// KeyFile is the private key's name inside the ledger root (.tree-ring/):
// PKCS #8 in PEM, mode 0600, created create-only and replaced only by a
// recorded rotation (rotate.go).
const KeyFile = "store.key"

// maxKeyFile bounds the key file read (a PEM ed25519 key is 119 bytes).
const maxKeyFile = 4 << 10

// statementPrefix is the domain separation of the signed bytes: a
// signature over a fleet event can never be taken for anything else.
const statementPrefix = "tree-ring fleet event v1\n"

// Statement is the bytes signed for one event: its store, position and
// hash. The hash covers prev_hash, so one valid signature vouches for the
// whole chain up to that event.
func Statement(storeID string, position uint64, hash string) []byte {
	b := make([]byte, 0, len(statementPrefix)+36+1+20+1+64)
	b = append(b, statementPrefix...)
	b = append(b, storeID...)
	b = append(b, '\n')
	b = strconv.AppendUint(b, position, 10)
	b = append(b, '\n')
	return append(b, hash...)
}

// Sign returns the signature of the event's statement, standard base64.
func Sign(priv ed25519.PrivateKey, storeID string, position uint64, hash string) string {
	return base64.StdEncoding.EncodeToString(ed25519.Sign(priv, Statement(storeID, position, hash)))
}

// ErrUnsigned is an event that carries no signature.
var ErrUnsigned = errors.New("unsigned")

// Verify checks sig (standard base64) over the event's statement.
func Verify(pub ed25519.PublicKey, storeID string, position uint64, hash, sig string) error {
	if sig == "" {
		return ErrUnsigned
	}
	b, err := base64.StdEncoding.Strict().DecodeString(sig)
	if err != nil || len(b) != ed25519.SignatureSize || !ed25519.Verify(pub, Statement(storeID, position, hash), b) {
		return errors.New("the signature does not verify against the store's key")
	}
	return nil
}

// EncodeKey is a public key as the ledger and fleet files write it.
func EncodeKey(pub ed25519.PublicKey) string { return base64.StdEncoding.EncodeToString(pub) }

// DecodeKey parses EncodeKey's form.
func DecodeKey(s string) (ed25519.PublicKey, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%q is not an ed25519 public key (32 bytes, standard base64)", s)
	}
	return ed25519.PublicKey(b), nil
}

// LoadKey reads the store's private key under the ledger root; ok is false
// when there is none. A key readable by group or others is refused, as
// ssh refuses one: it may have been copied.
func LoadKey(root string) (priv ed25519.PrivateKey, ok bool, err error) {
	return loadKeyFile(root, KeyFile)
}

func loadKeyFile(root, name string) (priv ed25519.PrivateKey, ok bool, err error) {
	pr, err := openRoot(root)
	if err != nil {
		return nil, false, err
	}
	defer pr.Close()
	f, exists, err := pr.OpenRead(name)
	if err != nil || !exists {
		return nil, false, keyErr(name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, keyErr(name, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, false, fmt.Errorf("store key %s is readable by others (mode %04o); it must be 0600", name, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, false, keyErr(name, err)
	}
	priv, err = parseKey(name, b)
	if err != nil {
		return nil, false, err
	}
	return priv, true, nil
}

// CreateKey makes the store's key pair and writes its private half
// create-only (0600) under the ledger root. When another process created
// it first, that key is returned: one store, one key at a time.
func CreateKey(root string, rand io.Reader) (ed25519.PrivateKey, error) {
	priv, err := createKeyFile(root, KeyFile, rand)
	var exists *adapters.ExistsError
	if errors.As(err, &exists) {
		have, ok, err := LoadKey(root)
		if err == nil && !ok {
			err = errors.New("store key vanished while it was being created")
		}
		return have, err
	}
	return priv, err
}

// createKeyFile writes a new key at name, create-only: an existing file
// is an *adapters.ExistsError and stays as it was.
func createKeyFile(root, name string, rand io.Reader) (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand)
	if err != nil {
		return nil, err
	}
	b, err := keyPEM(priv)
	if err != nil {
		return nil, err
	}
	pr, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	err = pr.CreateFile(name, b, 0o600, 0o700)
	var exists *adapters.ExistsError
	if errors.As(err, &exists) {
		return nil, err
	}
	if err != nil {
		return nil, keyErr(name, err)
	}
	return priv, nil
}

func keyPEM(priv ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func openRoot(root string) (*adapters.ProjectRoot, error) {
	canon, err := adapters.CanonicalProjectRoot(root)
	if err != nil {
		return nil, err
	}
	return adapters.OpenProjectRoot(canon)
}

func parseKey(name string, b []byte) (ed25519.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" || len(b) > maxKeyFile {
		return nil, fmt.Errorf("store key %s is not a PEM private key", name)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	priv, ok := k.(ed25519.PrivateKey)
	if err != nil || !ok {
		return nil, fmt.Errorf("store key %s is not an ed25519 PKCS #8 key", name)
	}
	return priv, nil
}

// keyErr names the file but never its contents.
func keyErr(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store key %s: %w", name, err)
}
