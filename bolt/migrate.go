package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/tree-ring/tree-ring/events"
	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Format 1 kept one index key per event: streams (stream, 0x00, version →
// position) and ids (id → position). Format 2 replaced them with blocks
// (index.go). Only the migration reads the format-1 names.
var (
	bucketStreamsV1 = []byte("streams")
	bucketIDsV1     = []byte("ids")
)

const formatV1 = "1"

// keyMigrated records, while a format-1 ledger is being migrated, the last
// position the format-2 indexes hold.
var keyMigrated = []byte("index_migrated")

// migrateChunk is how many events one migration transaction indexes: it
// bounds the transaction's dirty pages. A variable so tests can use small
// chunks.
var migrateChunk = 50_000

// migrateIndexes brings a format-1 ledger to format 2 by building
// stream_blocks and id_blocks from the events bucket, migrateChunk events
// per transaction, under the write lock this Store holds from Open. Until
// the last transaction, which drops the format-1 indexes and sets
// meta.format to 2, the ledger is a format-1 ledger with its old indexes
// intact (the new buckets and meta.index_migrated are extra keys no
// format-1 reader looks at): a migration killed midway leaves a ledger that
// reads as format 1 and that the next write open resumes from
// index_migrated. Events appended meanwhile by a format-1 build are
// indexed by the resumed migration, which reads from the events bucket.
func (s *Store) migrateIndexes() error {
	for {
		done := false
		err := s.update(func(tx *bbolt.Tx) error {
			var err error
			done, err = migrateStep(tx, migrateChunk)
			return s.indexErr(err)
		})
		if err != nil {
			return fmt.Errorf("migrate the ledger's indexes from format %s to %s: %w", formatV1, FormatVersion, err)
		}
		if done {
			return nil
		}
	}
}

// migrateStep indexes up to chunk events after meta.index_migrated and, when
// that reaches the head, finishes the migration. It reports whether the
// ledger is at format 2.
func migrateStep(tx *bbolt.Tx, chunk int) (bool, error) {
	m := tx.Bucket(bucketMeta)
	if string(m.Get(keyFormat)) != formatV1 {
		return true, nil
	}
	ids, err := tx.CreateBucketIfNotExists(bucketIDBlocks)
	if err != nil {
		return false, err
	}
	streams, err := tx.CreateBucketIfNotExists(bucketStreamBlocks)
	if err != nil {
		return false, err
	}
	ids.FillPercent, streams.FillPercent = 0.9, 0.9
	var last uint64
	if v := m.Get(keyMigrated); v != nil {
		if len(v) != 8 {
			return false, fmt.Errorf("%w: meta %s holds %d bytes", errBlock, keyMigrated, len(v))
		}
		last = binary.BigEndian.Uint64(v)
	}
	evb := tx.Bucket(bucketEvents)
	head := evb.Sequence()
	var w indexWriter
	versions := map[string]uint64{}
	c := evb.Cursor()
	n := 0
	var buf eventBuf
	for k, v := c.Seek(u64(last + 1)); k != nil && n < chunk; k, v = c.Next() {
		pos := binary.BigEndian.Uint64(k)
		if len(k) != 8 || pos != last+1 {
			return false, fmt.Errorf("%w: events: key %x follows position %d", errBlock, k, last)
		}
		raw, err := buf.bytes(v)
		if err != nil {
			return false, fmt.Errorf("%w: position %d: %v", errBlock, pos, err)
		}
		e, err := events.DecodeStoredRef(raw)
		if err != nil {
			return false, fmt.Errorf("%w: position %d: %v", errBlock, pos, err)
		}
		ver, ok := versions[e.Stream]
		if !ok {
			if ver, err = lastIndexedVersion(streams, e.Stream); err != nil {
				return false, err
			}
		}
		if e.Version != ver+1 || e.Position != pos {
			return false, fmt.Errorf("%w: position %d holds %s@%d at position %d, the stream's previous version is %d", errBlock, pos, e.Stream, e.Version, e.Position, ver)
		}
		if err := w.add(e.Stream, e.Version, e.ID, pos); err != nil {
			return false, err
		}
		versions[e.Stream] = e.Version
		last = pos
		n++
	}
	if err := w.flush(ids, streams, &valueArena{}); err != nil {
		return false, err
	}
	if last < head {
		return false, m.Put(keyMigrated, u64(last))
	}
	for _, b := range [][]byte{bucketIDsV1, bucketStreamsV1} {
		if err := tx.DeleteBucket(b); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return false, err
		}
	}
	if err := m.Delete(keyMigrated); err != nil {
		return false, err
	}
	return true, m.Put(keyFormat, []byte(FormatVersion))
}

// lastIndexedVersion is the last version of stream in stream_blocks (0:
// none).
func lastIndexedVersion(b *bbolt.Bucket, stream string) (uint64, error) {
	c := b.Cursor()
	k, _ := c.Seek(streamKey(stream, math.MaxUint64))
	var v []byte
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if k == nil || !hasPrefix(k, append([]byte(stream), 0)) {
		return 0, nil
	}
	_, first, ps, err := decodeStreamBlock(k, v)
	if err != nil {
		return 0, err
	}
	return first + uint64(len(ps)/8) - 1, nil
}
