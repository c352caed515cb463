package projections

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tree-ring/tree-ring/events"
)

// HarnessesName is the bucket of the harness-state projection.
const HarnessesName = "harnesses"

// Harness is the folded state of one harness stream: its FSM state (the To
// of the last event that carries a transition), the markers of its last
// detection, while it needs review, why and which paths, and while it is
// failed, the failed preflight's diagnostic code.
type Harness struct {
	State   string   `json:"state"`
	Markers []string `json:"markers,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	Paths   []string `json:"paths,omitempty"`
}

// harnessesProjection folds the harness streams' transitions.
type harnessesProjection struct{}

func init() { register(&harnessesProjection{}) }

func (*harnessesProjection) Name() string { return HarnessesName }
func (*harnessesProjection) Version() int { return 1 }

// Handles every harness event that embeds a transition.
func (*harnessesProjection) Handles(t string) bool {
	spec, ok := events.Lookup(t)
	return ok && spec.StreamPrefix == events.HarnessPrefix && spec.Moves()
}

func (p *harnessesProjection) Apply(kv KV, _ Bodies, e *events.Envelope) error {
	id, ok := strings.CutPrefix(e.Stream, events.HarnessPrefix)
	if !ok {
		return fmt.Errorf("%s on stream %s", e.Type, e.Stream)
	}
	v, err := payloadOf(e)
	if err != nil {
		return err
	}
	tr, ok := events.Moves(v)
	if !ok {
		return nil
	}
	key := []byte("h/" + id)
	var h Harness
	if raw := kv.Get(key); raw != nil {
		if h, err = decodeJSON[Harness](raw); err != nil {
			return fmt.Errorf("harness %s state: %w", id, err)
		}
	}
	h.State = tr.To
	switch pl := v.(type) {
	case *events.HarnessDetected:
		h.Markers = pl.Markers
	case *events.PublicationReviewRequired:
		h.Reason, h.Paths = pl.Reason, pl.Paths
	case *events.BridgeDriftDetected:
		h.Reason, h.Paths = pl.Reason, pl.Paths
		if h.Reason == "" {
			h.Reason = "bridge_changed"
		}
	case *events.HarnessDeactivationRequested:
		h.Reason, h.Paths = "deactivation_requested", pl.Paths
	case *events.PreflightFailed:
		h.Reason, h.Paths = pl.Reason, nil
	}
	switch h.State {
	case "needs-user-review":
	case "failed":
		h.Paths = nil
	default:
		h.Reason, h.Paths = "", nil
	}
	return putJSON(kv, key, h)
}

// HarnessState returns the folded state of harness id; ok is false when the
// harness has no events (its state is then fsm.Initial).
func HarnessState(kv KV, id string) (Harness, bool, error) {
	raw := kv.Get([]byte("h/" + id))
	if raw == nil {
		return Harness{}, false, nil
	}
	h, err := decodeJSON[Harness](raw)
	if err != nil {
		return Harness{}, false, fmt.Errorf("harness %s state: %w", id, err)
	}
	return h, true, nil
}

// HarnessIDs lists the harnesses with events, sorted.
func HarnessIDs(kv KV) ([]string, error) {
	var ids []string
	err := kv.ForEach([]byte("h/"), func(k, _ []byte) error {
		ids = append(ids, string(k[2:]))
		return nil
	})
	sort.Strings(ids)
	return ids, err
}
