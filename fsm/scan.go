package fsm

import (
	"fmt"
	"strings"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/strictjson"
)

// core is what replay needs from a payload. Replay reads it with
// strictjson's Reader (top-level keys only, nested values checked and
// skipped) instead of the reflective decoder into the payload type, which
// costs several times more per event: the envelopes replay receives were
// already validated strictly (on append to the ledger, or by
// events.DecodeEnvelope for a file). The Reader reads keys exactly as that
// validation did (escapes decoded, duplicates refused), so replay and
// validation cannot disagree about which keys a payload holds. An event at
// another schema version goes through events.DecodePayload, which refuses
// it.
type core struct {
	from, to, harness string
	receipt, worker   string
	state, status     string
}

// payloadCore extracts the core fields of e's payload.
func payloadCore(e *events.Envelope) (core, error) {
	spec, ok := events.Lookup(e.Type)
	if !ok {
		return core{}, &events.UnknownTypeError{Type: e.Type}
	}
	if e.SchemaVersion != spec.SchemaVersion {
		p, err := events.DecodePayload(e)
		if err != nil {
			return core{}, err
		}
		return coreOf(p), nil
	}
	var c core
	r := strictjson.NewReader(e.Payload, strictjson.Limits{})
	err := r.Object(func(key []byte) error {
		var dst *string
		switch string(key) {
		case "from":
			dst = &c.from
		case "to":
			dst = &c.to
		case "harness_id":
			dst = &c.harness
		case "receipt_id":
			dst = &c.receipt
		case "worker_key_fingerprint":
			dst = &c.worker
		case "state":
			dst = &c.state
		case "status":
			dst = &c.status
		default:
			return nil // skipped (and checked) by the reader
		}
		b, err := r.String()
		if err != nil {
			return err
		}
		// The common values (state names, the stream's harness id,
		// "success") are shared rather than allocated per event.
		if s, ok := known(b, e.Stream); ok {
			*dst = s
		} else {
			*dst = string(b)
		}
		return nil
	})
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return core{}, fmt.Errorf("payload: %w", err)
	}
	return c, nil
}

// coreOf reads the core fields from a decoded payload.
func coreOf(p any) core {
	var c core
	if t, ok := events.Moves(p); ok {
		c.from, c.to = t.From, t.To
	}
	c.harness, _ = harnessOf(p)
	switch p := p.(type) {
	case *events.PreflightStarted:
		c.worker = p.WorkerKeyFingerprint
	case *events.PreflightSucceeded:
		c.receipt, c.worker = p.ReceiptID, p.WorkerKeyFingerprint
	case *events.ReceiptRecorded:
		c.receipt, c.worker, c.state, c.status = p.ReceiptID, p.WorkerKeyFingerprint, p.State, p.Status
	case *events.ReceiptAdopted:
		c.receipt, c.worker, c.state, c.status = p.ReceiptID, p.WorkerKeyFingerprint, p.State, p.Status
	case *events.ReceiptPruned:
		c.receipt, c.worker = p.ReceiptID, p.WorkerKeyFingerprint
	}
	return c
}

// known returns a shared string equal to b when b is a state name, the
// harness id of stream, or "success"; the comparisons do not allocate.
func known(b []byte, stream string) (string, bool) {
	for _, st := range States {
		if string(b) == string(st) {
			return string(st), true
		}
	}
	if id, ok := strings.CutPrefix(stream, events.HarnessPrefix); ok && string(b) == id {
		return id, true
	}
	if string(b) == "success" {
		return "success", true
	}
	return "", false
}
