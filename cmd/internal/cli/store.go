package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/projections"
)

// OpenStore opens the ledger under root with opts, refusing to create the
// ledger of a root whose activation.json names a store (the ledger was
// deleted, or another writer, the Rust Tree Ring, initialized the
// project): a new one would carry another store id than every bridge;
// that is *LedgerMissingError with the repair, init's adoption. A
// read-only open never creates anything and fails with
// *bolt.NotFoundError when there is no ledger.
func OpenStore(root string, opts bolt.Options) (*bolt.Store, error) {
	named := ManifestNamesStore(root)
	opts.MustExist = opts.MustExist || named
	st, err := bolt.OpenRoot(root, opts)
	var nf *bolt.NotFoundError
	if named && errors.As(err, &nf) {
		return nil, NoLedger(root, err)
	}
	return st, err
}

// LedgerMissingError is a write to a root whose activation.json names a
// store but whose ledger is gone (deleted, or never created: the Rust Tree
// Ring initialized the project). Nothing is created: a new ledger would
// mint another store id than the one every bridge and receipt names. The
// repair is init, which adopts the manifest with its store id
// (docs/adoption.md), or a backup.
type LedgerMissingError struct{ Path string }

func (e *LedgerMissingError) Error() string {
	return fmt.Sprintf("%s: the ledger is missing although activation.json names its store; nothing was created; repair: run `tree-ring init` to adopt activation.json (its store id is kept), or restore ledger.db from a backup", e.Path)
}

// Diagnostic is the code a failed run records (docs/runs.md).
func (e *LedgerMissingError) Diagnostic() string { return "ledger_missing" }

// NoStoreError is a write command run in a project whose store init has
// not created: the ledger is only ever created inside a project by init
// (or by events import into a fresh checkout), because a .tree-ring
// without init's manifest makes the project's committed hooks fail.
type NoStoreError struct{}

func (*NoStoreError) Error() string {
	return "no Tree Ring store in this project; nothing was created; run `tree-ring init` first"
}

// Diagnostic is the code a failed run records (docs/runs.md).
func (*NoStoreError) Diagnostic() string { return "no_store" }

// ManifestNamesStore reports whether root holds an activation.json (a
// store was initialized here).
func ManifestNamesStore(root string) bool {
	_, err := os.Lstat(filepath.Join(root, filepath.Base(adapters.ManifestPath)))
	return err == nil
}

// NoLedger is the refusal of a command that needs the ledger under root
// and finds none: *LedgerMissingError when activation.json names a store,
// else generic.
func NoLedger(root string, generic error) error {
	if ManifestNamesStore(root) {
		return &LedgerMissingError{Path: filepath.Join(root, bolt.LedgerFile)}
	}
	return generic
}

// StoreIdentity is the store id and project root fingerprint a ledger's
// store.initialized recorded; ok is false before it.
func StoreIdentity(r *bolt.Reader) (projections.ManifestStore, bool, error) {
	raw := r.Projection(projections.ManifestName).Get([]byte("store"))
	if raw == nil {
		return projections.ManifestStore{}, false, nil
	}
	var ms projections.ManifestStore
	if err := json.Unmarshal(raw, &ms); err != nil {
		return projections.ManifestStore{}, false, fmt.Errorf("manifest store: %w", err)
	}
	return ms, true, nil
}

// AsVerifyFailure makes a corrupt ledger a failed verification (exit 3):
// audit verify's, fleet verify's and fleet status's.
func AsVerifyFailure(err error) error {
	var ce *bolt.CorruptError
	var ve *bolt.VerifyError
	if errors.As(err, &ce) && !errors.As(err, &ve) {
		return &bolt.VerifyError{Detail: err.Error()}
	}
	return err
}
