package projections

import (
	"bytes"
	"fmt"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/fold"
	"github.com/tree-ring/tree-ring/events/memory"
)

// DuplicatesName is the bucket of the duplicate index: every live memory
// (not superseded, redacted or deleted) under its memory.DuplicateKey, a
// digest of project, scope, scope owner and normalized summary. remember
// and capture look a new summary up in it inside their write transaction.
// It holds no text, and an entry leaves with its memory.
//
// Keys (the key's first dupKeyLen bytes: a lookup may return memories
// of another key, which its caller tells apart by what the key stands
// for, as memory.Duplicate does; 2^64 keys make that rare, and the index
// half the size of one keyed by the whole digest):
//
//	'k' key(8) id  -> empty
//	'm' id         -> key(8)
const DuplicatesName = "duplicates"

const dupKeyLen = 8

type duplicatesProjection struct{}

func init() { register(duplicatesProjection{}) }

func (duplicatesProjection) Name() string { return DuplicatesName }
func (duplicatesProjection) Version() int { return 2 } // 2: keyed by 8 bytes of the digest
func (duplicatesProjection) Handles(t string) bool {
	return t == events.TypeMemoryCaptured || t == events.TypeMemorySuperseded || t == events.TypeMemoryForgotten
}

// Batch holds a transaction's entries and writes them in key order at its
// end: the keys are digests, so one by one they land at random places.
func (duplicatesProjection) Batch(kv KV) fold.Batch { return fold.NewOverlay(kv) }

// Apply reads the payload value the event's validation decoded when the
// event carries it (payloadOf), else decodes the stored payload strictly.
func (duplicatesProjection) Apply(kv KV, bodies Bodies, e *events.Envelope) error {
	v, err := payloadOf(e)
	if err != nil {
		return fmt.Errorf("duplicates: %w", err)
	}
	switch p := v.(type) {
	case *events.MemoryCaptured:
		return dupCaptured(kv, bodies, p)
	case *events.MemorySuperseded:
		return dupRemove(kv, p.MemoryID)
	case *events.MemoryForgotten:
		return dupRemove(kv, p.MemoryID)
	}
	return nil
}

func dupMemKey(id string) []byte { return append([]byte{'m'}, id...) }

func dupEntryKey(key []byte, id string) []byte {
	k := make([]byte, 0, 1+len(key)+len(id))
	return append(append(append(k, 'k'), key...), id...)
}

func dupCaptured(kv KV, bodies Bodies, p *events.MemoryCaptured) error {
	if p.Redacted || kv.Get(dupMemKey(p.MemoryID)) != nil {
		return nil // a tombstone is never a duplicate; the first capture of an id wins
	}
	raw := bodies.Body(p.BodySHA256)
	if raw == nil {
		// A body deleted later (forget --mode delete) is absent on a
		// re-fold; the forget that follows would remove the entry, so the
		// end state is the live fold's.
		return nil
	}
	b, err := memory.ParseBody(raw)
	if err != nil {
		return fmt.Errorf("duplicates: %s: %w", p.MemoryID, err)
	}
	key := memory.DuplicateKey(p.Project, p.Scope, p.AgentProfile, p.WorkflowID, p.SessionID, string(b.Summary))
	if err := kv.Put(dupMemKey(p.MemoryID), key[:dupKeyLen]); err != nil {
		return err
	}
	return kv.Put(dupEntryKey(key[:dupKeyLen], p.MemoryID), []byte{})
}

func dupRemove(kv KV, id string) error {
	key := kv.Get(dupMemKey(id))
	if len(key) != dupKeyLen {
		return nil
	}
	if err := kv.Delete(dupEntryKey(bytes.Clone(key), id)); err != nil {
		return err
	}
	return kv.Delete(dupMemKey(id))
}

// SameSummary returns the live memories indexed under a duplicate key, in
// id order (ids begin with their creation time, so oldest first), and any
// under another key with the same first dupKeyLen bytes.
func SameSummary(kv KV, key [32]byte) ([]string, error) {
	var ids []string
	prefix := append([]byte{'k'}, key[:dupKeyLen]...)
	err := kv.ForEach(prefix, func(k, _ []byte) error {
		ids = append(ids, string(k[len(prefix):]))
		return nil
	})
	return ids, err
}
