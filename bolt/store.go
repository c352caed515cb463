// Package bolt is the ledger: an append-only, hash-chained event log in one
// bbolt file, with inline projections folded in the same write transaction.
// It is the only package that imports go.etcd.io/bbolt.
//
// Lifetime and concurrency: a Store holds bbolt's exclusive file lock from
// Open to Close (a shared lock when read-only), so a process opens, works and
// closes quickly; other processes wait up to Options.LockTimeout. A Store is
// safe for concurrent use by goroutines: bbolt serializes writers and gives
// each reader a snapshot. Byte slices handed to callbacks are valid only
// during the callback.
package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/projections"
	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// LedgerFile is the file name of the ledger inside the root.
const LedgerFile = "ledger.db"

// FormatVersion is written to meta.format when a ledger is created.
const FormatVersion = "1"

// AnyVersion disables the expected-version check of Append.
const AnyVersion int64 = -1

var (
	bucketEvents  = []byte("events")
	bucketStreams = []byte("streams")
	bucketIDs     = []byte("ids")
	bucketHeads   = []byte("heads")
	bucketMeta    = []byte("meta")
	bucketBodies  = []byte("bodies")
	bucketProjCP  = []byte("projection_checkpoints")

	keyFormat    = []byte("format")
	keyChainHead = []byte("chain_head")
)

func projBucket(name string) []byte { return []byte("p/" + name) }

// Options configure Open.
type Options struct {
	// LockTimeout bounds the wait for another process's lock (default 3s).
	LockTimeout time.Duration
	// ReadOnly opens with a shared lock and never creates anything.
	ReadOnly bool
	// Projections are folded inline on every append.
	Projections []projections.Projection
}

// Store is an open ledger.
type Store struct {
	db    *bbolt.DB
	path  string
	projs []projections.Projection
}

// OpenRoot opens <root>/ledger.db. In write mode it creates the root (0700)
// and the ledger (0600) when absent. A root or ledger that is a symlink or
// of the wrong kind is refused; nothing is created then.
func OpenRoot(root string, opts Options) (*Store, error) {
	fi, err := os.Lstat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if opts.ReadOnly {
			return nil, &NotFoundError{Path: root}
		}
		if err := os.Mkdir(root, 0o700); err != nil {
			return nil, fmt.Errorf("create root %s: %w", root, err)
		}
		if err := syncDir(filepath.Dir(root)); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("stat root %s: %w", root, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, &InvalidRootError{Path: root, Reason: "root is a symlink; refusing to follow it"}
	case !fi.IsDir():
		return nil, &InvalidRootError{Path: root, Reason: "root is not a directory"}
	}
	return Open(filepath.Join(root, LedgerFile), opts)
}

// Open opens the ledger file at path. See OpenRoot for the rules.
func Open(path string, opts Options) (*Store, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 3 * time.Second
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if opts.ReadOnly {
			return nil, &NotFoundError{Path: path}
		}
	case err != nil:
		return nil, fmt.Errorf("stat ledger %s: %w", path, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, &InvalidRootError{Path: path, Reason: "ledger is a symlink; refusing to follow it"}
	case !fi.Mode().IsRegular():
		return nil, &InvalidRootError{Path: path, Reason: "ledger is not a regular file"}
	case fi.Size() == 0:
		return nil, &CorruptError{Path: path, Err: errors.New("empty file")}
	}
	bopts := &bbolt.Options{
		Timeout:      opts.LockTimeout,
		FreelistType: bbolt.FreelistMapType,
		ReadOnly:     opts.ReadOnly,
		OpenFile: func(name string, flag int, mode os.FileMode) (*os.File, error) {
			return os.OpenFile(name, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, mode)
		},
	}
	db, err := openDB(path, bopts)
	if err != nil {
		switch {
		case errors.Is(err, berrors.ErrTimeout):
			return nil, &LockedError{Path: path, Timeout: opts.LockTimeout}
		case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
			errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping):
			return nil, &CorruptError{Path: path, Err: err}
		}
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	s := &Store{db: db, path: path, projs: opts.Projections}
	if opts.ReadOnly {
		if err := s.checkFormat(); err != nil {
			db.Close()
			return nil, err
		}
		return s, nil
	}
	if err := s.init(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// openDB converts bbolt panics on garbage files into errors.
func openDB(path string, o *bbolt.Options) (db *bbolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, &CorruptError{Path: path, Err: fmt.Errorf("%v", r)}
		}
	}()
	return bbolt.Open(path, 0o600, o)
}

// Path is the ledger file path.
func (s *Store) Path() string { return s.path }

// Close releases the file lock.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) checkFormat() error {
	return s.view(func(tx *bbolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if m == nil || tx.Bucket(bucketEvents) == nil {
			return &CorruptError{Path: s.path, Err: errors.New("missing ledger buckets")}
		}
		if f := string(m.Get(keyFormat)); f != FormatVersion {
			return &CorruptError{Path: s.path, Err: fmt.Errorf("unsupported format %q", f)}
		}
		return nil
	})
}

// init creates the buckets of a new ledger and brings every projection up to
// the head: a projection at another version is rebuilt, one behind the head
// (a crash mid-rebuild) catches up.
func (s *Store) init() error {
	// The common case (every bucket there, every projection at the head)
	// needs no write: a write transaction that changes nothing still costs
	// bbolt two fdatasyncs, on every open of every command.
	if ok, err := s.ready(); err != nil || ok {
		return err
	}
	err := s.update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketEvents, bucketStreams, bucketIDs, bucketHeads, bucketMeta, bucketBodies, bucketProjCP} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("create bucket %s: %w", b, err)
			}
		}
		m := tx.Bucket(bucketMeta)
		switch f := m.Get(keyFormat); {
		case f == nil:
			if err := m.Put(keyFormat, []byte(FormatVersion)); err != nil {
				return err
			}
			return m.Put(keyChainHead, []byte(events.GenesisHash))
		case string(f) != FormatVersion:
			return &CorruptError{Path: s.path, Err: fmt.Errorf("unsupported format %q", f)}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.catchUp(context.Background())
}

// ready reports, in a read transaction, whether init has nothing to do:
// every bucket exists, the format is this one, and every projection has a
// checkpoint at its version and at the head.
func (s *Store) ready() (bool, error) {
	ok := true
	err := s.view(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketEvents, bucketStreams, bucketIDs, bucketHeads, bucketMeta, bucketBodies, bucketProjCP} {
			if tx.Bucket(b) == nil {
				ok = false
				return nil
			}
		}
		if string(tx.Bucket(bucketMeta).Get(keyFormat)) != FormatVersion {
			ok = false // init reports a foreign format
			return nil
		}
		head := tx.Bucket(bucketEvents).Sequence()
		for _, p := range s.projs {
			v, pos, has := projectionCheckpoint(tx, p.Name())
			if !has || v != p.Version() || pos != head {
				ok = false
				return nil
			}
		}
		return nil
	})
	return ok && err == nil, err
}

func (s *Store) view(fn func(tx *bbolt.Tx) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &CorruptError{Path: s.path, Err: fmt.Errorf("%v", r)}
		}
	}()
	return s.db.View(fn)
}

func (s *Store) update(fn func(tx *bbolt.Tx) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &CorruptError{Path: s.path, Err: fmt.Errorf("%v", r)}
		}
	}()
	return s.db.Update(fn)
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), v) }

func streamKey(stream string, version uint64) []byte {
	k := make([]byte, 0, len(stream)+9)
	k = append(k, stream...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, version)
}

// head is the value of heads[stream]: version and last position.
type head struct{ version, position uint64 }

func getHead(tx *bbolt.Tx, stream string) head {
	v := tx.Bucket(bucketHeads).Get([]byte(stream))
	if len(v) != 16 {
		return head{}
	}
	return head{binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}
