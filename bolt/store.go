// Package bolt is the ledger: an append-only, hash-chained event log in one
// bbolt file, with inline projections folded in the same write transaction.
// It is the only package that imports go.etcd.io/bbolt.
//
// Lifetime and concurrency: a Store holds bbolt's exclusive file lock from
// Open to Close (a shared lock when read-only), so a process opens, works and
// closes quickly; other processes wait up to Options.LockTimeout. A long
// operation opened with Options.SliceBudget releases and retakes the lock
// between its transactions (Store.Yield). A Store is safe for concurrent use
// by goroutines, except Yield and the operations that call it with a slice
// budget (CheckImport, ImportProgress, Rebuild, ReadStreamSliced), which
// need it to themselves: bbolt serializes
// writers and gives each reader a snapshot. Byte slices handed to callbacks
// are valid only during the callback.
package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/fold"
	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// LedgerFile is the file name of the ledger inside the root.
const LedgerFile = "ledger.db"

// FormatVersion is written to meta.format when a ledger is created. Format
// 2 indexes streams and ids in blocks (index.go); a write open with
// Options.Migrate migrates a format-1 ledger (migrate.go). Format 3 packs
// event values (pack.go) and reads every format-2 value as it is: a
// format-2 ledger is read, and written with unpacked values, as format 2
// until a write open with Options.Migrate (`tree-ring init`, which installs
// this build's program for the hooks) sets format 3; from then on values
// are packed and a build that reads only format 2 refuses the ledger
// instead of misreading a packed value.
const FormatVersion = "3"

// formatV2 is the format a format-3 build reads and upgrades in place.
const formatV2 = "2"

// AnyVersion disables the expected-version check of Append.
const AnyVersion int64 = -1

var (
	bucketEvents = []byte("events")
	bucketHeads  = []byte("heads")
	bucketMeta   = []byte("meta")
	bucketBodies = []byte("bodies")
	bucketProjCP = []byte("projection_checkpoints")

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
	// MustExist makes a write open of a missing ledger a *NotFoundError
	// instead of creating it (the root names a store whose ledger is gone).
	MustExist bool
	// Projections are folded inline on every append.
	Projections []fold.Projection
	// OnCommit, when set, is called after every write transaction that
	// committed (each is one durable bbolt commit: data and meta page
	// synced). Tests count commits with it; it must not use the Store.
	OnCommit func()
	// SliceBudget, when positive, bounds how long a long operation holds
	// the file lock at a time, its commit included: ImportProgress and
	// Rebuild end a transaction once it has worked its share of the budget
	// or a process announced that it waits (slice.go), and release the
	// lock between transactions (see Store.Yield). Zero holds it from Open
	// to Close.
	SliceBudget time.Duration
	// Migrate lets a write open bring a format-1 ledger to this build's
	// format (migrate.go), and a format-2 one to format 3 (pack.go).
	// Without it a write open refuses format 1 as a read-only open does
	// (*FormatMigrationError): the hooks of a project run its installed
	// program, an older build that reads only format 1,
	// so the migration belongs to the explicit upgrade (`tree-ring init`,
	// which installs this build's program in the same run), never to a
	// `remember` that happens to run a newer build.
	//
	// The same holds for a projection stored at another layout than this
	// build folds (its Version changed, or it is new and the ledger has
	// events): refolding it can take seconds at 100k memories, past a
	// host's hook timeout, and an older installed program would fold it
	// back. Without Migrate (or Rebuilding) any open, read-only included,
	// refuses it with *ProjectionMigrationError and changes nothing.
	Migrate bool
	// Rebuilding opens a ledger whose projections the caller refolds
	// itself (Store.Rebuild, `tree-ring projections rebuild`): a write
	// open neither refuses a projection at another layout nor folds it;
	// it is not folded inline until the rebuild swaps its new state in.
	Rebuilding bool
}

// Store is an open ledger.
type Store struct {
	db   *bbolt.DB
	path string
	// indeterminate is set by a commit whose outcome is unknown; every
	// later write returns it (see CommitError).
	indeterminate *CommitError
	projs         []fold.Projection
	opts          Options   // as opened, for Yield's reopen
	since         time.Time // when this process last took the file lock
	slice         *slicing  // with Options.SliceBudget (slice.go)
}

// OpenRoot opens <root>/ledger.db. In write mode it creates the root (0700)
// and the ledger (0600) when absent. A root or ledger that is a symlink or
// of the wrong kind is refused; nothing is created then.
func OpenRoot(root string, opts Options) (*Store, error) {
	fi, err := os.Lstat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if opts.ReadOnly || opts.MustExist {
			return nil, &NotFoundError{Path: root}
		}
		if err := os.Mkdir(root, 0o700); err != nil {
			if !errors.Is(err, fs.ErrExist) {
				return nil, fmt.Errorf("create root %s: %w", root, err)
			}
			// Another process created it meanwhile: check what it is.
			return OpenRoot(root, opts)
		}
		if err := syncDir(filepath.Dir(root)); err != nil {
			return nil, &CreateDurabilityError{Path: root, Err: err}
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

// Open opens the ledger file at path. See OpenRoot for the rules. A file
// that bbolt cannot read, that is truncated, or that holds another
// application's buckets is refused with *CorruptError before anything is
// written to it.
func Open(path string, opts Options) (*Store, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 3 * time.Second
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if opts.ReadOnly || opts.MustExist {
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
	if errors.Is(err, fs.ErrNotExist) {
		if err := createLedger(path); err != nil {
			return nil, err
		}
	}
	db, err := openDB(path, opts)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, path: path, projs: opts.Projections, opts: opts, since: time.Now()}
	if err := s.checkFile(); err != nil {
		db.Close()
		return nil, err
	}
	if opts.ReadOnly {
		if err := s.checkFormat(); err != nil {
			if s.empty() {
				err = &UninitializedError{Path: path}
			}
			db.Close()
			return nil, err
		}
	} else if err := s.init(); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.openSlicing(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// createLedger makes a new ledger (every bucket, format and genesis chain
// head, committed and synced) at path atomically: it is written under a
// temporary name and linked into place, so no process ever sees a
// half-initialized ledger, and an init killed at any moment leaves either
// no ledger.db or a complete empty one (bbolt would otherwise create an
// empty file before taking its lock, and a concurrent opener would find it
// empty). If another process wins the race, its file is kept. A temporary
// file left by a kill is named .ledger.db.new-*; nothing reads it.
func createLedger(path string) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".new-*")
	if err != nil {
		return fmt.Errorf("create ledger %s: %w", path, err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	removed := false
	defer func() {
		if !removed {
			syscall.Unlink(tmpPath)
		}
	}()
	db, err := bbolt.Open(tmpPath, 0o600, &bbolt.Options{Timeout: time.Second, FreelistType: bbolt.FreelistMapType})
	if err != nil {
		return fmt.Errorf("create ledger %s: nothing changed: %s", path, cause(err))
	}
	if err := db.Update(createLayout); err != nil {
		db.Close()
		return fmt.Errorf("create ledger %s: nothing changed: %s", path, cause(err))
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("create ledger %s: %w", path, err)
	}
	if err := os.Link(tmpPath, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create ledger %s: nothing changed: %s", path, cause(err))
	}
	removed = true
	if err := syscall.Unlink(tmpPath); err != nil {
		// The ledger is complete and in place; a second name for it stays.
		return &CreateDurabilityError{Path: path, Err: fmt.Errorf("its temporary name %s could not be removed: %w", filepath.Base(tmpPath), err)}
	}
	if err := syncDir(dir); err != nil {
		return &CreateDurabilityError{Path: path, Err: err}
	}
	return nil
}

// openDB opens the bbolt file. bbolt panics (or faults) on some damaged
// files while opening; that becomes a *CorruptError. The file bbolt opened
// is closed then, but its memory mapping, and with it the file lock, stays
// until the process exits (bbolt keeps the mapping private); a CLI process
// exits right after reporting.
func openDB(path string, opts Options) (db *bbolt.DB, err error) {
	var file *os.File
	bopts := &bbolt.Options{
		Timeout:      opts.LockTimeout,
		FreelistType: bbolt.FreelistMapType,
		ReadOnly:     opts.ReadOnly,
		OpenFile: func(name string, flag int, mode os.FileMode) (*os.File, error) {
			f, err := openNoFollow(name, flag, mode)
			if err != nil {
				return nil, err
			}
			for {
				if err := waitLock(f, !opts.ReadOnly, opts.LockTimeout); err != nil {
					f.Close()
					return nil, err
				}
				// `ledger compact` renames a new file over the path while
				// holding the old one's lock: locked, reopen if so.
				if same, err := namesFile(name, f); err != nil || same {
					if err != nil {
						f.Close()
						return nil, err
					}
					file = f
					return f, nil
				}
				f.Close()
				if f, err = openNoFollow(name, flag, mode); err != nil {
					return nil, err
				}
			}
		},
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if file != nil {
				file.Close()
			}
			db, err = nil, &CorruptError{Path: path, Err: fmt.Errorf("%v", r)}
		}
	}()
	db, err = bbolt.Open(path, 0o600, bopts)
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, berrors.ErrTimeout), errors.Is(err, errLockWait):
		return nil, &LockedError{Path: path, Timeout: opts.LockTimeout}
	case errors.Is(err, fs.ErrPermission), errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EROFS):
		// (A read-only file system is not the file's content.)
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	default:
		// The path is a regular file (checked by Open): whatever else
		// bbolt rejects is the file's content.
		return nil, &CorruptError{Path: path, Err: err}
	}
}

// namesFile reports whether path still names the open file f.
func namesFile(path string, f *os.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	pi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, &NotFoundError{Path: path}
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(fi, pi), nil
}

// checkFile refuses a file shorter than the pages its meta page claims (a
// truncated copy), before anything reads past the end of the mapping.
func (s *Store) checkFile() error {
	fi, err := os.Stat(s.path)
	if err != nil {
		return fmt.Errorf("stat ledger %s: %w", s.path, err)
	}
	return s.view(func(tx *bbolt.Tx) error {
		if need := tx.Size(); need > fi.Size() {
			return &CorruptError{Path: s.path, Err: fmt.Errorf("truncated: file is %d bytes, its pages need %d", fi.Size(), need)}
		}
		return nil
	})
}

// Path is the ledger file path.
func (s *Store) Path() string { return s.path }

// Close releases the file lock.
func (s *Store) Close() error {
	s.closeSlicing()
	return s.db.Close()
}

func (s *Store) checkFormat() error {
	return s.view(func(tx *bbolt.Tx) error {
		if err := checkLayout(s.path, tx); err != nil {
			return err
		}
		return s.checkProjections(tx)
	})
}

// checkProjections refuses a projection that only a refold from the first
// event would bring to this build's layout (see Options.Migrate), unless
// the open migrates or rebuilds.
func (s *Store) checkProjections(tx *bbolt.Tx) error {
	if s.opts.Migrate || s.opts.Rebuilding {
		return nil
	}
	head := tx.Bucket(bucketEvents).Sequence()
	for _, p := range s.projs {
		v, _, ok := projectionCheckpoint(tx, p.Name())
		if ok && v == p.Version() || !ok && head == 0 {
			continue
		}
		return &ProjectionMigrationError{Path: s.path, Projection: p.Name(), Found: v, Want: p.Version()}
	}
	return nil
}

// init creates the buckets of a new ledger and brings every projection up to
// the head: a projection at another version is rebuilt, one behind the head
// (a crash mid-rebuild) catches up. An up-to-date ledger is only read, so
// opening costs no commit.
func (s *Store) init() error {
	ready, migrate, pack := false, false, false
	err := s.view(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketMeta) == nil {
			return nil
		}
		err := checkLayout(s.path, tx)
		var fe *FormatMigrationError
		if errors.As(err, &fe) && s.opts.Migrate {
			migrate = true
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.checkProjections(tx); err != nil {
			return err
		}
		// Format 2 to 3 is only the switch: packing starts with the next
		// append (its values stay readable as they are).
		pack = s.opts.Migrate && !s.opts.ReadOnly && string(tx.Bucket(bucketMeta).Get(keyFormat)) == formatV2
		ready = s.projectionsCurrent(tx) && !pack
		return nil
	})
	if err != nil {
		return err
	}
	if migrate {
		if err := s.migrateIndexes(); err != nil {
			return err
		}
		return s.init()
	}
	if ready {
		return nil
	}
	err = s.update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketMeta) == nil {
			// Only an empty bbolt file becomes a ledger: refuse to adopt
			// another application's database.
			if k, _ := tx.Cursor().First(); k != nil {
				return &CorruptError{Path: s.path, Err: fmt.Errorf("not a tree-ring ledger (has bucket %q and no meta)", k)}
			}
			return createLayout(tx)
		}
		if err := checkLayout(s.path, tx); err != nil || !pack {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keyFormat, []byte(FormatVersion))
	})
	if err != nil || s.opts.Rebuilding {
		return err
	}
	return s.catchUp(context.Background())
}

var allBuckets = [][]byte{bucketEvents, bucketStreamBlocks, bucketIDBlocks, bucketHeads, bucketMeta, bucketBodies, bucketProjCP}

// checkLayout checks the format and that every bucket exists.
func checkLayout(path string, tx *bbolt.Tx) error {
	m := tx.Bucket(bucketMeta)
	if m == nil {
		return &CorruptError{Path: path, Err: errors.New("not a tree-ring ledger (no meta bucket)")}
	}
	if f := string(m.Get(keyFormat)); f == formatV1 {
		return &FormatMigrationError{Path: path, Found: f}
	} else if f != FormatVersion && f != formatV2 {
		return &CorruptError{Path: path, Err: fmt.Errorf("unsupported format %q (this build reads %q)", f, FormatVersion)}
	}
	for _, b := range allBuckets {
		if tx.Bucket(b) == nil {
			return &CorruptError{Path: path, Err: fmt.Errorf("missing bucket %s", b)}
		}
	}
	if h := m.Get(keyChainHead); len(h) != len(events.GenesisHash) {
		return &CorruptError{Path: path, Err: errors.New("missing chain head")}
	}
	return nil
}

// view and update run a bbolt transaction and turn a panic or a memory fault
// (bbolt reading a damaged file) into *CorruptError. bbolt rolls the
// transaction back and releases its locks before the panic reaches here.
func (s *Store) view(fn func(tx *bbolt.Tx) error) error {
	return s.guard(func() error { return s.db.View(fn) })
}

func (s *Store) guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = &CorruptError{Path: s.path, Err: fmt.Errorf("%v", r)}
		}
	}()
	return fn()
}

// empty reports whether the file holds no bucket at all.
func (s *Store) empty() bool {
	empty := false
	_ = s.view(func(tx *bbolt.Tx) error {
		k, _ := tx.Cursor().First()
		empty = k == nil
		return nil
	})
	return empty
}

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), v) }

func streamKey(stream string, version uint64) []byte {
	return appendStreamKey(make([]byte, 0, len(stream)+9), stream, version)
}

// head is the value of heads[stream]: version and last position.
type head struct{ version, position uint64 }

func getHead(heads *bbolt.Bucket, stream string) head {
	v := heads.Get([]byte(stream))
	if len(v) != 16 {
		return head{}
	}
	return head{binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])}
}
