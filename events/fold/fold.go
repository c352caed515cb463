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
// modified; copy what you keep. Put and Delete keep neither their key nor
// their value: the caller may reuse them.
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
	// Apply folds one event. It must be deterministic. e carries no
	// PrevHash nor Hash (a rebuild does not decode them, and an inline
	// fold clears them so both see the same envelope).
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

// Batcher is an optional extension of Projection for a fold that writes
// many keys per event (the recall index writes a posting block and a
// counter per token). The store folds all of one transaction's events
// into Batch(kv) instead of into kv, serves the projection's reads in that
// transaction from the batch, and calls Flush once before the transaction
// commits. The KV a flushed batch leaves must be byte for byte what
// applying the same events one by one to kv leaves.
type Batcher interface {
	Batch(kv KV) Batch
}

// Batch is a KV that holds writes until Flush. Not safe for concurrent
// use; it lives as long as the transaction of its KV.
type Batch interface {
	KV
	// Flush writes what the batch holds to its KV in key order, once per
	// key, and empties the batch, which stays usable.
	Flush() error
}

// Overlay is a Batch over a KV: writes are held in memory (the last value
// of each key, or its deletion) and read back by Get and ForEach; Flush
// writes each touched key once, in key order. Values handed to the KV by
// Flush are not reused afterwards (bbolt keeps a value until commit).
type Overlay struct {
	kv   KV
	held map[string]held
}

type held struct {
	v       []byte
	deleted bool
}

// NewOverlay returns an empty Overlay over kv.
func NewOverlay(kv KV) *Overlay { return &Overlay{kv: kv, held: map[string]held{}} }

// Get implements KV.
func (o *Overlay) Get(key []byte) []byte {
	if h, ok := o.held[string(key)]; ok {
		if h.deleted {
			return nil
		}
		return h.v
	}
	return o.kv.Get(key)
}

// Put implements KV. It copies value, into the held value's buffer when it
// fits: a value grown a little at a time (a posting block) is copied, not
// reallocated, most of the time.
func (o *Overlay) Put(key, value []byte) error {
	h, ok := o.held[string(key)]
	if ok && cap(h.v) >= len(value) {
		h.v = h.v[:len(value)]
	} else {
		h.v = make([]byte, len(value), max(len(value), 2*cap(h.v)))
	}
	copy(h.v, value)
	o.held[string(key)] = held{v: h.v}
	return nil
}

// Delete implements KV.
func (o *Overlay) Delete(key []byte) error {
	h := o.held[string(key)]
	o.held[string(key)] = held{v: h.v[:0], deleted: true}
	return nil
}

// ForEach implements KV: the KV's keys merged with the held ones, in byte
// order.
func (o *Overlay) ForEach(prefix []byte, fn func(k, v []byte) error) error {
	var mine []string
	for k := range o.held {
		if bytes.HasPrefix([]byte(k), prefix) {
			mine = append(mine, k)
		}
	}
	sort.Strings(mine)
	i := 0
	// emit visits the held keys before k (all that are left when k is nil).
	emit := func(k []byte) error {
		for ; i < len(mine) && (k == nil || mine[i] < string(k)); i++ {
			if h := o.held[mine[i]]; !h.deleted {
				if err := fn([]byte(mine[i]), h.v); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err := o.kv.ForEach(prefix, func(k, v []byte) error {
		if err := emit(k); err != nil {
			return err
		}
		if _, ok := o.held[string(k)]; ok {
			return nil // held: its value (or deletion) is emitted in order
		}
		return fn(k, v)
	})
	if err != nil {
		return err
	}
	return emit(nil)
}

// Flush implements Batch. A KV keeps neither the key nor the value it is
// given (bbolt copies the key; the store's KV copies the value): one key
// buffer serves every write.
func (o *Overlay) Flush() error {
	keys := make([]string, 0, len(o.held))
	for k := range o.held {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var kb []byte
	for _, k := range keys {
		h := o.held[k]
		kb = append(kb[:0], k...)
		var err error
		if h.deleted {
			err = o.kv.Delete(kb)
		} else {
			err = o.kv.Put(kb, h.v)
		}
		if err != nil {
			return err
		}
	}
	// Emptied, its map kept: a key written again gets a new value buffer,
	// so those handed to the KV are never written again.
	clear(o.held)
	return nil
}
