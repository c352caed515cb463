package projections

import (
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/fold"
	"github.com/tree-ring/tree-ring/projections/recall"
)

// recallIndex adapts the recall index (package recall, which does not
// import this package) to Projection.
type recallIndex struct{}

func (recallIndex) Name() string          { return recall.Name }
func (recallIndex) Version() int          { return recall.Version }
func (recallIndex) Handles(t string) bool { return recall.Handles(t) }
func (recallIndex) Apply(kv KV, b Bodies, e *events.Envelope) error {
	return recall.Apply(kv, b, e)
}

// Batch folds a transaction's memory events in memory (recall.Batch).
func (recallIndex) Batch(kv KV) fold.Batch { return recall.Batch(kv) }

func init() { register(recallIndex{}) }
