// Package replica is the layout of a fleet collector's directory
// (docs/fleet.md), which tree-ring-fleet collect writes and tree-ring
// fleet status and verify read: one ledger root per store, named by the
// store id, plus a stop record in the root of a replica the collector
// stopped. It knows no network.
package replica

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/fleet/fleetsign"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/projections"
)

// StopFile, inside a replica's root, records why the replica stopped.
const StopFile = "fleet-stopped.json"

// Stop is the stop record: the first position the collector refused.
type Stop struct {
	StoreID  string    `json:"store_id"`
	Position uint64    `json:"position"`
	Reason   string    `json:"reason"`
	At       time.Time `json:"at"`
}

// Root is the ledger root of store's replica under dir.
func Root(dir, store string) string { return filepath.Join(dir, store) }

// ReadStop reads the stop record of the replica at root; ok is false when
// the replica was never stopped. The record is kept twice, in StopFile
// and in the last-collect record, so deleting one file does not make a
// stopped replica look whole.
func ReadStop(root string) (s Stop, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(root, StopFile))
	if errors.Is(err, fs.ErrNotExist) {
		c, _, err := ReadCollected(root)
		if err != nil || c.Stopped == nil {
			return Stop{}, false, err
		}
		return *c.Stopped, true, nil
	}
	if err != nil {
		return Stop{}, false, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return Stop{}, true, fmt.Errorf("%s: %w", filepath.Join(root, StopFile), err)
	}
	return s, true, nil
}

// WriteStop writes the stop record of the replica at root create-only
// (the first reason stays), and a copy into its last-collect record.
func WriteStop(root string, s Stop) error {
	if err := writeStopFile(root, s); err != nil {
		return err
	}
	c, _, err := ReadCollected(root)
	if err != nil || c.Stopped != nil {
		return err
	}
	first, _, err := ReadStop(root)
	if err != nil {
		return err
	}
	c.StoreID, c.Stopped = s.StoreID, &first
	return WriteCollected(root, c)
}

func writeStopFile(root string, s Stop) error {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	canon, err := adapters.CanonicalProjectRoot(root)
	if err != nil {
		return err
	}
	pinned, err := adapters.OpenProjectRoot(canon)
	if err != nil {
		return err
	}
	defer pinned.Close()
	// The project files' create-only publication: a crash never leaves a
	// partial record that "the first reason stays" would keep.
	err = pinned.CreateFile(StopFile, append(b, '\n'), 0o600, 0o700)
	var exists *adapters.ExistsError
	if errors.As(err, &exists) {
		return nil
	}
	return err
}

// List is the store ids that have a replica root under dir, sorted, and
// apart the store ids whose entry is a symbolic link: fleet collect never
// makes one, so it is reported, never followed (it could point a replica
// at any ledger).
func List(dir string) (ids, links []string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("replica directory: %w", err)
	}
	for _, e := range ents {
		switch {
		case !events.ValidStoreID(e.Name()):
		case e.Type()&fs.ModeSymlink != 0:
			links = append(links, e.Name())
		case e.IsDir():
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	slices.Sort(links)
	return ids, links, nil
}

// SymlinkDetail is what status and verify say of a symlinked replica.
const SymlinkDetail = "the replica directory is a symbolic link, not followed (fleet collect writes real directories)"

// SignedFile, inside a replica's root, is the signature of the replica's
// head event as it arrived from the stream: `fleet verify` checks it
// against the store's recorded key, so a replica holding anything the
// store's key did not sign fails.
const SignedFile = "fleet-signed.json"

// Signed is the signed head record.
type Signed struct {
	StoreID   string `json:"store_id"`
	Position  uint64 `json:"position"`
	Hash      string `json:"hash"`
	Signature string `json:"signature"`
}

// ReadSigned reads the signed head record of the replica at root; ok is
// false when there is none.
func ReadSigned(root string) (s Signed, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(root, SignedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Signed{}, false, nil
	}
	if err != nil {
		return Signed{}, false, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return Signed{}, true, fmt.Errorf("%s: %w", filepath.Join(root, SignedFile), err)
	}
	return s, true, nil
}

// WriteSigned replaces the signed head record of the replica at root
// atomically (a temporary file renamed over it): a crash leaves the
// previous record, which verify then finds behind the head until the next
// collect rewrites it.
func WriteSigned(root string, s Signed) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return replaceFile(root, SignedFile, append(b, '\n'))
}

// replaceFile writes name under root through a temporary file renamed
// over it: a reader sees the old record or the new one.
func replaceFile(root, name string, b []byte) error {
	f, err := os.CreateTemp(root, ".fleet-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(root, name))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// CollectedFile, inside a replica's root, is what the stream held for the
// store when a collect last had nothing left to deliver, and when:
// `fleet status` shows the lag from it.
const CollectedFile = "fleet-collected.json"

// Collected is the last-collect record.
type Collected struct {
	StoreID    string    `json:"store_id"`
	StreamHead uint64    `json:"stream_head"`
	At         time.Time `json:"at"`
	// Stopped is the stop record's copy (WriteStop), carried over by
	// every later write.
	Stopped *Stop `json:"stopped,omitempty"`
}

// ReadCollected reads the last-collect record of the replica at root; ok
// is false when there is none.
func ReadCollected(root string) (c Collected, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(root, CollectedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Collected{}, false, nil
	}
	if err != nil {
		return Collected{}, false, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return Collected{}, true, fmt.Errorf("%s: %w", filepath.Join(root, CollectedFile), err)
	}
	return c, true, nil
}

// WriteCollected replaces the last-collect record of the replica at root
// atomically, keeping the stop record's copy it holds.
func WriteCollected(root string, c Collected) error {
	if c.Stopped == nil {
		old, _, err := ReadCollected(root)
		if err != nil {
			return err
		}
		c.Stopped = old.Stopped
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return replaceFile(root, CollectedFile, append(b, '\n'))
}

// ReadOnlyError is a write command run on a replica's root: a replica is
// the stream's copy of another host's ledger, written only by fleet
// collect.
type ReadOnlyError struct{}

func (ReadOnlyError) Error() string {
	return "this root is a fleet replica (written by fleet collect from another host's events): replicas are read-only; nothing was written (read commands such as audit verify and audit replay work on it)"
}

// RefuseWrite returns ReadOnlyError when root is a replica: it holds one
// of the records fleet collect writes beside a replica's ledger (its
// signed head, its stop record, its last collect), which a project's own
// root never has.
func RefuseWrite(root string) error {
	for _, name := range []string{SignedFile, StopFile, CollectedFile} {
		if _, err := os.Lstat(filepath.Join(root, name)); err == nil {
			return ReadOnlyError{}
		}
	}
	return nil
}

// ReadExpect reads a fleet file (fleetsign.ParseExpect) named by --expect.
func ReadExpect(path string) (map[string]fleetsign.Expected, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("fleet file: %w", err)
	}
	defer f.Close()
	exp, err := fleetsign.ParseExpect(f)
	if err != nil {
		return nil, fmt.Errorf("fleet file %s: %w", path, err)
	}
	return exp, nil
}

// MigrationError is a read of a replica that an older collector wrote at a
// layout this build migrates (bolt.NeedsMigration). The step differs from a
// project's: a replica refuses init, like every write; the next fleet
// collect with this build migrates it.
type MigrationError struct{ Cause error }

func (e *MigrationError) Error() string {
	layout, _ := bolt.MigrationLayout(e.Cause)
	return "this fleet replica was written by an older collector (" + layout + "): the next `tree-ring fleet collect` with this build migrates it (a replica has no init); then retry"
}

func (e *MigrationError) Unwrap() error { return e.Cause }

// Diagnostic is the cause's code (projection_migration,
// ledger_format_migration).
func (e *MigrationError) Diagnostic() string {
	var d interface{ Diagnostic() string }
	if errors.As(e.Cause, &d) {
		return d.Diagnostic()
	}
	return "replica_migration"
}

// Open opens the replica's ledger under root read-only, as every fleet
// read command does; one an older collector wrote is a *MigrationError.
func Open(root string, lockTimeout time.Duration) (*bolt.Store, error) {
	st, err := bolt.OpenRoot(root, bolt.Options{ReadOnly: true, LockTimeout: lockTimeout, Projections: projections.All()})
	return st, Named(root, err)
}

// Named is err, the refused open of the ledger under root, as a
// *MigrationError when root is a replica's and the open needs a migration.
func Named(root string, err error) error {
	if bolt.NeedsMigration(err) && RefuseWrite(root) != nil {
		return &MigrationError{Cause: err}
	}
	return err
}
