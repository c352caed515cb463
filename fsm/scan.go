package fsm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tree-ring/tree-ring/events"
)

// core is what replay needs from a payload. Replay reads it with a small
// top-level scanner instead of the strict reflective decoder, which costs
// tens of microseconds per event: the envelopes replay receives were
// already validated strictly (on append to the ledger, or by
// events.DecodeEnvelope for a file), and events at an older schema version
// still go through events.DecodePayload so upcasters apply.
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
	err := topFields(e.Payload, func(key, raw []byte) error {
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
			return nil
		}
		// The common values (state names, the stream's harness id,
		// "success") are shared rather than allocated per event.
		if len(raw) >= 2 && raw[0] == '"' {
			in := raw[1 : len(raw)-1]
			if s, ok := known(in, e.Stream); ok {
				*dst = s
				return nil
			}
		}
		s, err := jsonString(raw)
		if err != nil {
			return fmt.Errorf("payload key %q: %w", key, err)
		}
		*dst = s
		return nil
	})
	return c, err
}

// coreOf reads the core fields from a decoded payload.
func coreOf(p any) core {
	var c core
	if t, ok := events.Moves(p); ok {
		c.from, c.to = t.From, t.To
	}
	c.harness, _ = harnessOf(p)
	switch p := p.(type) {
	case *events.PreflightSucceeded:
		c.receipt, c.worker = p.ReceiptID, p.WorkerKeyFingerprint
	case *events.ReceiptRecorded:
		c.receipt, c.worker, c.state, c.status = p.ReceiptID, p.WorkerKeyFingerprint, p.State, p.Status
	case *events.ReceiptPruned:
		c.receipt, c.worker = p.ReceiptID, p.WorkerKeyFingerprint
	}
	return c
}

func jsonString(raw []byte) (string, error) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", fmt.Errorf("not a string")
	}
	in := raw[1 : len(raw)-1]
	if bytes.IndexByte(in, '\\') < 0 {
		return string(in), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// topFields walks one JSON object and calls fn with each top-level key
// (unescaped keys only; an escaped key is passed raw) and the raw bytes of
// its value. Nested values are skipped, honouring strings and escapes.
func topFields(data []byte, fn func(key, raw []byte) error) error {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return fmt.Errorf("payload is not a JSON object")
	}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return fmt.Errorf("payload: want a key at byte %d", i)
		}
		end, err := skipValue(data, i)
		if err != nil {
			return err
		}
		key := data[i+1 : end-1]
		i = skipWS(data, end)
		if i >= len(data) || data[i] != ':' {
			return fmt.Errorf("payload: want ':' at byte %d", i)
		}
		start := skipWS(data, i+1)
		if end, err = skipValue(data, start); err != nil {
			return err
		}
		if err := fn(key, data[start:end]); err != nil {
			return err
		}
		i = skipWS(data, end)
		switch {
		case i < len(data) && data[i] == ',':
			i = skipWS(data, i+1)
		case i < len(data) && data[i] == '}':
			if skipWS(data, i+1) != len(data) {
				return fmt.Errorf("payload: trailing data at byte %d", i+1)
			}
			return nil
		default:
			return fmt.Errorf("payload: want ',' or '}' at byte %d", i)
		}
	}
}

func skipWS(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value starting at i.
func skipValue(data []byte, i int) (int, error) {
	if i >= len(data) {
		return i, fmt.Errorf("payload: unexpected end")
	}
	switch data[i] {
	case '"':
		for j := i + 1; j < len(data); j++ {
			switch data[j] {
			case '\\':
				j++
			case '"':
				return j + 1, nil
			}
		}
		return i, fmt.Errorf("payload: unterminated string at byte %d", i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, err := skipValue(data, j)
				if err != nil {
					return i, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return i, fmt.Errorf("payload: unterminated value at byte %d", i)
	default:
		j := i
		for j < len(data) && !isDelim(data[j]) {
			j++
		}
		if j == i {
			return i, fmt.Errorf("payload: unexpected %q at byte %d", data[i], i)
		}
		return j, nil
	}
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
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
