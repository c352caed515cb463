package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// compactTxBytes bounds one transaction of the compacted copy: bbolt
// holds a transaction's nodes in memory until its commit.
const compactTxBytes = 64 << 20

// CompactReport is a compaction's before and after.
type CompactReport struct {
	Before, After Space
	Verified      VerifyReport // the copy, verified before it replaced the ledger
}

// Compact rewrites the ledger with bbolt's own compaction (bbolt.Compact:
// every bucket copied in key order into full pages, sequences kept), so
// the file loses its free pages, its growth reserve and the half-empty
// pages of keys inserted at random places. Every key and value is copied
// as it is: the hash chain, the bodies and the projections are the same
// bytes; only in a format-3 ledger, the event values a format-2 build
// stored as JSON are packed (repackEvents, then the copy is compacted once
// more), and read back the same. The copy is written beside the ledger,
// verified as `audit verify` verifies (Verify, with this Store's
// projections), then renamed over
// ledger.db while this Store holds the lock; a failure before the rename
// leaves the ledger untouched. The Store then works on the new file.
//
// A process that opened the old file while the lock was held finds, once
// it has the lock, that the path names another file, and opens it again
// (openDB). Needs a write open without a slice budget (the lock is held
// throughout).
func (s *Store) Compact(ctx context.Context) (CompactReport, error) {
	var rep CompactReport
	if s.opts.ReadOnly || s.slice != nil {
		return rep, errors.New("compact needs a write open without a slice budget")
	}
	if s.indeterminate != nil {
		return rep, s.indeterminate
	}
	var err error
	if rep.Before, err = s.Space(); err != nil {
		return rep, err
	}
	tmp, err := s.compactCopy(ctx, &rep)
	if tmp != "" {
		defer syscall.Unlink(tmp) // gone after the rename; left only by a failure
	}
	if err != nil {
		return rep, err
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return rep, fmt.Errorf("compact: nothing changed: %s", cause(err))
	}
	// From here the path names the compacted file. Lock it before the old
	// file's lock is released, so a waiter reopening the path waits for us.
	db, err := openDB(s.path, s.opts)
	if err != nil {
		s.db.Close() // the old file is unlinked: nothing may write to it
		return rep, fmt.Errorf("compact: the compacted ledger is in place, but reopening it failed: %w", err)
	}
	old := s.db
	s.db, s.since = db, time.Now()
	if err := old.Close(); err != nil {
		return rep, fmt.Errorf("compact: close the old file: %w", err)
	}
	if err := syncDir(filepath.Dir(s.path)); err != nil {
		return rep, &CreateDurabilityError{Path: s.path, Err: err}
	}
	rep.After, err = s.Space()
	return rep, err
}

// compactCopy writes and verifies the compacted copy under a temporary
// name beside the ledger and returns that name.
func (s *Store) compactCopy(ctx context.Context, rep *CompactReport) (string, error) {
	repacked := 0
	tmp, err := s.compactInto(s.db, func(dst *bbolt.DB) (err error) {
		repacked, err = repackEvents(dst)
		return err
	})
	if err == nil && repacked > 0 {
		// The values packed in place left their pages part empty: compact
		// the copy once more (only a ledger that format 2 wrote).
		tmp, err = s.recompact(tmp)
	}
	if err != nil {
		return tmp, fmt.Errorf("compact: nothing changed: %w", err)
	}
	cp, err := Open(tmp, Options{ReadOnly: true, Projections: s.projs, LockTimeout: time.Second})
	if err != nil {
		return tmp, fmt.Errorf("compact: the copy does not open, nothing changed: %w", err)
	}
	rep.Verified, err = cp.Verify(ctx)
	if cerr := cp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return tmp, fmt.Errorf("compact: the copy failed verification, nothing changed: %w", err)
	}
	return tmp, nil
}

// repackChunk bounds one transaction of repackEvents.
const repackChunk = 20_000

// repackEvents packs, in db (a compacted copy of a format-3 ledger), every
// event value a format-2 build stored as JSON; it returns how many it
// packed. The stored envelopes read back the same.
func repackEvents(db *bbolt.DB) (int, error) {
	format := ""
	if err := db.View(func(tx *bbolt.Tx) error { format = string(tx.Bucket(bucketMeta).Get(keyFormat)); return nil }); err != nil || format != FormatVersion {
		return 0, err // a format-2 ledger stays readable by the program its hooks run
	}
	total := 0
	next := uint64(1)
	for {
		n, done := 0, false
		err := db.Update(func(tx *bbolt.Tx) error {
			b := tx.Bucket(bucketEvents)
			var keys, vals [][]byte
			c := b.Cursor()
			k, v := c.Seek(u64(next))
			for ; k != nil && len(keys) < repackChunk; k, v = c.Next() {
				if len(v) > 0 && v[0] == '{' {
					if p := packEvent(nil, v); p[0] == packedTag {
						keys, vals = append(keys, append([]byte(nil), k...)), append(vals, p)
					}
				}
				next = binary.BigEndian.Uint64(k) + 1
			}
			done = k == nil
			b.FillPercent = 1.0
			for i := range keys {
				if err := b.Put(keys[i], vals[i]); err != nil {
					return err
				}
			}
			n = len(keys)
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("pack the format-2 event values: %w", err)
		}
		total += n
		if done {
			return total, nil
		}
	}
}

// compactInto compacts src (bbolt.Compact) into a new temporary file
// beside the ledger, runs then on the copy before closing it (nil:
// nothing), and returns its name: "" when it could not be created, else
// the caller's to remove.
func (s *Store) compactInto(src *bbolt.DB, then func(dst *bbolt.DB) error) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(s.path), "."+filepath.Base(s.path)+".compact-*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	f.Close()
	dst, err := bbolt.Open(tmp, 0o600, &bbolt.Options{Timeout: time.Second, FreelistType: bbolt.FreelistMapType})
	if err != nil {
		return tmp, errors.New(cause(err))
	}
	// Every commit of the copy is synced by bbolt (data, then meta page);
	// each grows the file to its pages only, not by bbolt's 16 MiB.
	dst.AllocSize = dst.Info().PageSize
	err = s.guard(func() error { return bbolt.Compact(dst, src, compactTxBytes) })
	if err == nil && then != nil {
		err = then(dst)
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return tmp, err
}

// recompact compacts the copy at path into another (compactInto),
// removes path and returns the new name; on failure, path.
func (s *Store) recompact(path string) (string, error) {
	src, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		return path, errors.New(cause(err))
	}
	out, err := s.compactInto(src, nil)
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if out != "" {
			syscall.Unlink(out)
		}
		return path, err
	}
	syscall.Unlink(path)
	return out, nil
}
