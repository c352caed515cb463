// Package projections holds the read models of the ledger: pure folds over
// events. A projection sees one event at a time and a key/value view of its
// own state; it never reads the clock, randomness or the filesystem, so the
// same events always fold into the same bytes. The store applies every
// registered projection inside the append transaction (inline), and
// `audit verify` re-folds them into memory to compare.
package projections

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/fold"
)

// KV, Bodies, Projection and MemKV are declared in events/fold, which the
// store imports instead of this package; the aliases keep this package's
// folds and its callers in its own vocabulary.
type (
	KV         = fold.KV
	Bodies     = fold.Bodies
	Projection = fold.Projection
	MemKV      = fold.MemKV
)

// NewMemKV returns an empty MemKV.
func NewMemKV() *MemKV { return fold.NewMemKV() }

var registered []Projection

// register adds a projection to the set every store folds. Each projection
// file registers itself from init so that adding one touches one file.
func register(p Projection) {
	for _, q := range registered {
		if q.Name() == p.Name() {
			panic("projections: duplicate " + p.Name())
		}
	}
	registered = append(registered, p)
}

// All returns every registered projection, sorted by name.
func All() []Projection {
	out := append([]Projection(nil), registered...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// payloadOf is e's payload value for a fold: the value its validation
// decoded when e carries it (events.VerifiedPayload: an event built by
// events.Factory and appended in this process, or imported), else decoded
// strictly now (a rebuild or verify reading stored events).
func payloadOf(e *events.Envelope) (any, error) {
	if v, ok := events.VerifiedPayload(e); ok {
		return v, nil
	}
	return events.DecodePayload(e)
}

// plainPayload is e's payload value for a fold on the hook path (runs,
// receipts): the value its validation decoded when e carries it, else the
// stored payload decoded plainly, several times faster than strictly:
// every stored payload was strictly decoded and checked on append (and is
// again by verify), so the fold only needs the values.
func plainPayload(e *events.Envelope) (any, error) {
	if v, ok := events.VerifiedPayload(e); ok {
		return v, nil
	}
	spec, ok := events.Lookup(e.Type)
	if !ok {
		return nil, &events.UnknownTypeError{Type: e.Type}
	}
	raw, err := events.CurrentPayload(e)
	if err != nil {
		return nil, err
	}
	v := spec.NewPayload()
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("%s payload: %w", e.Type, err)
	}
	return v, nil
}
