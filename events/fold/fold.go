// Package fold declares what an inline projection is: a pure fold of
// envelopes into a private key/value space. It imports only events, so the
// store (bolt), which applies folds, and the read models (projections),
// which implement them, both depend on it without depending on each other.
package fold

import (
	"bytes"
	"sort"

	"github.com/tree-ring/tree-ring/events"
)

// KV is a projection's private key/value space. Values returned by Get and
// passed to ForEach are valid only until the next write and must not be
// modified; copy what you keep.
type KV interface {
	Get(key []byte) []byte
	Put(key, value []byte) error
	Delete(key []byte) error
	// ForEach visits keys with the given prefix in byte order. The callback
	// must not write to the KV.
	ForEach(prefix []byte, fn func(k, v []byte) error) error
}

// Bodies reads the content-addressed memory bodies (text kept outside the
// envelopes so that it can be deleted). nil when absent.
type Bodies interface {
	Body(sha256hex string) []byte
}

// Projection is an inline read model.
type Projection interface {
	// Name is the bucket name; stable across releases.
	Name() string
	// Version changes when the fold changes; a stored projection at another
	// version is rebuilt on open.
	Version() int
	// Handles reports whether the fold uses events of this type, so replay
	// can skip the rest without decoding them.
	Handles(eventType string) bool
	// Apply folds one event. It must be deterministic.
	Apply(kv KV, bodies Bodies, e *events.Envelope) error
}

// MemKV is an in-memory KV used by verify and tests. Not safe for
// concurrent use.
type MemKV struct{ m map[string][]byte }

// NewMemKV returns an empty MemKV.
func NewMemKV() *MemKV { return &MemKV{m: map[string][]byte{}} }

// Get implements KV.
func (k *MemKV) Get(key []byte) []byte { return k.m[string(key)] }

// Put implements KV.
func (k *MemKV) Put(key, value []byte) error {
	k.m[string(key)] = append([]byte(nil), value...)
	return nil
}

// Delete implements KV.
func (k *MemKV) Delete(key []byte) error { delete(k.m, string(key)); return nil }

// ForEach implements KV.
func (k *MemKV) ForEach(prefix []byte, fn func(k, v []byte) error) error {
	for _, key := range k.Keys() {
		if !bytes.HasPrefix([]byte(key), prefix) {
			continue
		}
		if err := fn([]byte(key), k.m[key]); err != nil {
			return err
		}
	}
	return nil
}

// Keys returns every key in byte order.
func (k *MemKV) Keys() []string {
	keys := make([]string, 0, len(k.m))
	for key := range k.m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

// Len is the number of keys.
func (k *MemKV) Len() int { return len(k.m) }
