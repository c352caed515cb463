package bolt

import (
	"context"
	"errors"

	"github.com/tree-ring/tree-ring/events"
	bbolt "go.etcd.io/bbolt"
)

// importChunk is how many events one import transaction appends.
const importChunk = 10_000

// ImportResult counts what Import did.
type ImportResult struct {
	Imported int `json:"imported"`
	Skipped  int `json:"skipped_duplicates"`
}

// Import appends envelopes exported from another ledger (already validated
// by events.DecodeEnvelope). Foreign ids are kept; version, position and
// hashes are reassigned so they chain in this ledger. An id already present
// with the same content is skipped; with different content the import is
// refused before anything is written (*IDConflictError). Large imports are
// appended in chunks of importChunk events, each atomic; a retry after an
// interruption skips what landed.
func (s *Store) Import(ctx context.Context, envs []events.Envelope) (ImportResult, error) {
	var res ImportResult
	// Refuse conflicts up front so a bad file changes nothing.
	if err := s.view(func(tx *bbolt.Tx) error {
		return checkConflicts(s, tx, envs)
	}); err != nil {
		return res, err
	}
	for start := 0; start < len(envs); start += importChunk {
		end := min(start+importChunk, len(envs))
		var imported, skipped int
		err := s.Update(ctx, func(tx *Tx) error {
			imported, skipped = 0, 0
			for i := start; i < end; i++ {
				if tx.HasID(envs[i].ID) {
					// Content equality was checked; a concurrent importer
					// may also have landed it since: Append re-checks.
					if _, err := tx.Append(envs[i].Stream, AnyVersion, envs[i]); err != nil {
						return err
					}
					skipped++
					continue
				}
				if _, err := tx.Append(envs[i].Stream, AnyVersion, envs[i]); err != nil {
					return err
				}
				imported++
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		res.Imported += imported
		res.Skipped += skipped
	}
	return res, nil
}

func checkConflicts(s *Store, tx *bbolt.Tx, envs []events.Envelope) error {
	ids := tx.Bucket(bucketIDs)
	evb := tx.Bucket(bucketEvents)
	inFile := make(map[[16]byte]int, len(envs))
	for i := range envs {
		if j, dup := inFile[envs[i].ID]; dup {
			if !events.SameContent(&envs[j], &envs[i]) {
				return &IDConflictError{ID: envs[i].ID.String()}
			}
		}
		inFile[envs[i].ID] = i
		p := ids.Get(envs[i].ID[:])
		if p == nil {
			continue
		}
		stored, err := events.DecodeStored(evb.Get(p))
		if err != nil {
			return &CorruptError{Path: s.path, Err: err}
		}
		if !events.SameContent(&stored, &envs[i]) {
			return &IDConflictError{ID: envs[i].ID.String(), Position: stored.Position}
		}
	}
	return nil
}

// IsConflict reports whether err is an id conflict.
func IsConflict(err error) bool {
	var c *IDConflictError
	return errors.As(err, &c)
}
