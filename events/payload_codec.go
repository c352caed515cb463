package events

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/tree-ring/tree-ring/events/strictjson"
)

// Hand-written payload encoders of the events every preflight and hook
// appends. Factory.New uses them instead of json.Marshal, whose first use
// of each type (its field cache, built by reflection) cost a hook more than
// the rest of building its events. Each writes exactly json.Marshal's bytes
// for every value (TestPayloadEncodersMatchEncodingJSON, fuzzed): the bytes
// are hashed into the chain, so they must never drift.

// appendPayload appends p's JSON when p's type has a hand-written encoder.
// The types are matched exactly: a type that embeds one of them (as
// ReceiptAdopted embeds ReceiptRecorded) has more members, so the promoted
// method must never be taken for its encoder.
func appendPayload(b []byte, p any) ([]byte, bool) {
	switch p := p.(type) {
	case *PreflightSucceeded:
		return p.appendJSON(b), true
	case *ReceiptRecorded:
		return p.appendJSON(b), true
	case *ReceiptPruned:
		return p.appendJSON(b), true
	case *RunStarted:
		return p.appendJSON(b), true
	case *RunFinished:
		return p.appendJSON(b), true
	}
	return b, false
}

// object appends the members of one JSON object in order. Keys are
// constant ASCII identifiers that need no escaping.
type object struct {
	b []byte
	n int // members written
}

func (o *object) key(k string) {
	if o.n == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(append(append(o.b, '"'), k...), '"', ':')
}

func (o *object) str(k, v string) {
	o.key(k)
	o.b = strictjson.AppendString(o.b, v)
}

func (o *object) int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

// omitStr and omitInt are members tagged omitempty.
func (o *object) omitStr(k, v string) {
	if v != "" {
		o.str(k, v)
	}
}

func (o *object) omitInt(k string, v int64) {
	if v != 0 {
		o.int(k, v)
	}
}

func (o *object) end() []byte {
	if o.n == 0 {
		return append(o.b, '{', '}')
	}
	return append(o.b, '}')
}

func (p *PreflightSucceeded) appendJSON(b []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	o := object{b: b}
	o.str("from", p.From)
	o.str("to", p.To)
	o.str("harness_id", p.HarnessID)
	o.str("worker_key_fingerprint", p.WorkerKeyFingerprint)
	o.str("receipt_id", p.ReceiptID)
	o.str("query_class", p.QueryClass)
	o.int("result_count", int64(p.ResultCount))
	o.str("selected_memory_ids_sha256", p.SelectedMemoryIDsSHA256)
	o.int("duration_ms", p.DurationMS)
	o.omitStr("task_hint_sha256", p.TaskHintSHA256)
	o.omitInt("task_hint_chars", int64(p.TaskHintChars))
	return o.end()
}

func (p *ReceiptRecorded) appendJSON(b []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	o := object{b: b}
	o.str("harness_id", p.HarnessID)
	o.str("receipt_id", p.ReceiptID)
	o.int("protocol_version", int64(p.ProtocolVersion))
	o.str("adapter_version", p.AdapterVersion)
	o.str("bridge_fingerprint", p.BridgeFingerprint)
	o.str("store_id", p.StoreID)
	o.str("project_root_fingerprint", p.ProjectRootFingerprint)
	o.str("worker_key_fingerprint", p.WorkerKeyFingerprint)
	o.str("state", p.State)
	o.str("query_class", p.QueryClass)
	o.int("result_count", int64(p.ResultCount))
	o.str("selected_memory_ids_sha256", p.SelectedMemoryIDsSHA256)
	o.int("duration_ms", p.DurationMS)
	o.str("status", p.Status)
	o.str("sha256", p.SHA256)
	o.omitStr("recorded_at", p.RecordedAt)
	if s := p.Session; s != nil {
		o.key("session")
		so := object{b: o.b}
		so.str("agent_profile", s.AgentProfile)
		so.str("workflow_id", s.WorkflowID)
		so.str("session_id", s.SessionID)
		o.b = so.end()
	}
	o.omitStr("path", p.Path)
	return o.end()
}

func (p *ReceiptPruned) appendJSON(b []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	o := object{b: b}
	o.str("harness_id", p.HarnessID)
	o.str("worker_key_fingerprint", p.WorkerKeyFingerprint)
	o.str("receipt_id", p.ReceiptID)
	o.str("reason", p.Reason)
	return o.end()
}

func (p *RunStarted) appendJSON(b []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	o := object{b: b}
	o.str("run_id", p.RunID)
	o.str("scope_key", p.ScopeKey)
	o.str("command", p.Command)
	o.omitStr("harness", p.Harness)
	o.str("stage", p.Stage)
	o.int("pid", int64(p.PID))
	o.str("started_at", p.StartedAt)
	o.omitStr("input_sha256", p.InputSHA256)
	o.omitInt("input_chars", p.InputChars)
	return o.end()
}

func (p *RunFinished) appendJSON(b []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	o := object{b: b}
	o.str("run_id", p.RunID)
	o.str("scope_key", p.ScopeKey)
	o.str("status", p.Status)
	o.str("stage", p.Stage)
	o.str("ended_at", p.EndedAt)
	o.int("duration_ms", p.DurationMS)
	o.omitStr("diagnostic", p.Diagnostic)
	o.omitStr("input_sha256", p.InputSHA256)
	o.omitInt("input_chars", p.InputChars)
	if t := p.Telemetry; t != nil {
		o.key("telemetry")
		to := object{b: o.b}
		to.omitStr("query_class", t.QueryClass)
		if t.ResultCount != nil {
			to.int("result_count", int64(*t.ResultCount))
		}
		to.omitStr("receipt_id", t.ReceiptID)
		if t.Items != nil {
			to.int("items", *t.Items)
		}
		o.b = to.end()
	}
	return o.end()
}

// decodePayload reads r into p when p's type (matched exactly, as in
// appendPayload) has a hand-written decoder. Each reads one object of
// exactly the keys json.Marshal writes for the type, strings and integers
// only, into the zero value p points to; an error means only that the fast
// path does not apply (the caller decodes again by reflection, for the
// exact result or error).
func decodePayload(r *strictjson.Reader, p any) (bool, error) {
	switch p := p.(type) {
	case *PreflightSucceeded:
		return true, p.decodeJSON(r)
	case *ReceiptRecorded:
		return true, p.decodeJSON(r)
	case *ReceiptPruned:
		return true, p.decodeJSON(r)
	case *RunStarted:
		return true, p.decodeJSON(r)
	case *RunFinished:
		return true, p.decodeJSON(r)
	}
	return false, nil
}

// errFallBack sends a decode to the reflective decoder: a key or a shape
// (null, a float, a number out of range) the fast path does not read.
var errFallBack = errors.New("events: not the fast path's shape")

// decodeFast decodes raw into v, a pointer to a zero payload, when v has a
// hand-written decoder and raw is a document it reads; it reports whether
// it did. Whatever it accepts, strictjson.Unmarshal and json.Unmarshal
// accept too, with the same result (FuzzPayloadDecoders).
func decodeFast(raw []byte, v any) bool {
	r := strictjson.NewReader(raw, strictjson.Limits{})
	ok, err := decodePayload(&r, v)
	if !ok {
		return false
	}
	if err == nil {
		err = r.End()
	}
	return err == nil
}

// UnmarshalPayload is json.Unmarshal of a stored payload into v, a pointer
// to a zero payload struct, without reflection for the payloads a hook
// appends. Folds use it: stored payloads were strictly checked on append.
func UnmarshalPayload(raw []byte, v any) error {
	if decodeFast(raw, v) {
		return nil
	}
	return json.Unmarshal(raw, v)
}

func readStr(r *strictjson.Reader, dst *string) error {
	b, err := r.String()
	*dst = string(b)
	return err
}

func readInt64(r *strictjson.Reader, dst *int64) error {
	n, err := r.Int()
	*dst = n
	return err
}

func readInt(r *strictjson.Reader, dst *int) error {
	n, err := r.Int()
	if err == nil && int64(int(n)) != n {
		return errFallBack
	}
	*dst = int(n)
	return err
}

// fields reads an object whose members are each read by field(key); a
// key it does not know (nil) falls back. It stops at null, which
// json.Unmarshal and strictjson treat differently from a missing member.
func fields(r *strictjson.Reader, field func(key string) func(*strictjson.Reader) error) error {
	return r.Object(func(key []byte) error {
		if r.Kind() == "null" {
			return errFallBack
		}
		if f := field(string(key)); f != nil {
			return f(r)
		}
		return errFallBack
	})
}

func str(dst *string) func(*strictjson.Reader) error {
	return func(r *strictjson.Reader) error { return readStr(r, dst) }
}

func num(dst *int) func(*strictjson.Reader) error {
	return func(r *strictjson.Reader) error { return readInt(r, dst) }
}

func num64(dst *int64) func(*strictjson.Reader) error {
	return func(r *strictjson.Reader) error { return readInt64(r, dst) }
}

func (p *PreflightSucceeded) decodeJSON(r *strictjson.Reader) error {
	return fields(r, func(k string) func(*strictjson.Reader) error {
		switch k {
		case "from":
			return str(&p.From)
		case "to":
			return str(&p.To)
		case "harness_id":
			return str(&p.HarnessID)
		case "worker_key_fingerprint":
			return str(&p.WorkerKeyFingerprint)
		case "receipt_id":
			return str(&p.ReceiptID)
		case "query_class":
			return str(&p.QueryClass)
		case "result_count":
			return num(&p.ResultCount)
		case "selected_memory_ids_sha256":
			return str(&p.SelectedMemoryIDsSHA256)
		case "duration_ms":
			return num64(&p.DurationMS)
		case "task_hint_sha256":
			return str(&p.TaskHintSHA256)
		case "task_hint_chars":
			return num(&p.TaskHintChars)
		}
		return nil
	})
}

func (p *ReceiptRecorded) decodeJSON(r *strictjson.Reader) error {
	return fields(r, func(k string) func(*strictjson.Reader) error {
		switch k {
		case "harness_id":
			return str(&p.HarnessID)
		case "receipt_id":
			return str(&p.ReceiptID)
		case "protocol_version":
			return num(&p.ProtocolVersion)
		case "adapter_version":
			return str(&p.AdapterVersion)
		case "bridge_fingerprint":
			return str(&p.BridgeFingerprint)
		case "store_id":
			return str(&p.StoreID)
		case "project_root_fingerprint":
			return str(&p.ProjectRootFingerprint)
		case "worker_key_fingerprint":
			return str(&p.WorkerKeyFingerprint)
		case "state":
			return str(&p.State)
		case "query_class":
			return str(&p.QueryClass)
		case "result_count":
			return num(&p.ResultCount)
		case "selected_memory_ids_sha256":
			return str(&p.SelectedMemoryIDsSHA256)
		case "duration_ms":
			return num64(&p.DurationMS)
		case "status":
			return str(&p.Status)
		case "sha256":
			return str(&p.SHA256)
		case "recorded_at":
			return str(&p.RecordedAt)
		case "path":
			return str(&p.Path)
		case "session":
			return func(r *strictjson.Reader) error {
				s := &ReceiptSession{}
				p.Session = s
				return fields(r, func(k string) func(*strictjson.Reader) error {
					switch k {
					case "agent_profile":
						return str(&s.AgentProfile)
					case "workflow_id":
						return str(&s.WorkflowID)
					case "session_id":
						return str(&s.SessionID)
					}
					return nil
				})
			}
		}
		return nil
	})
}

func (p *ReceiptPruned) decodeJSON(r *strictjson.Reader) error {
	return fields(r, func(k string) func(*strictjson.Reader) error {
		switch k {
		case "harness_id":
			return str(&p.HarnessID)
		case "worker_key_fingerprint":
			return str(&p.WorkerKeyFingerprint)
		case "receipt_id":
			return str(&p.ReceiptID)
		case "reason":
			return str(&p.Reason)
		}
		return nil
	})
}

func (p *RunStarted) decodeJSON(r *strictjson.Reader) error {
	return fields(r, func(k string) func(*strictjson.Reader) error {
		switch k {
		case "run_id":
			return str(&p.RunID)
		case "scope_key":
			return str(&p.ScopeKey)
		case "command":
			return str(&p.Command)
		case "harness":
			return str(&p.Harness)
		case "stage":
			return str(&p.Stage)
		case "pid":
			return num(&p.PID)
		case "started_at":
			return str(&p.StartedAt)
		case "input_sha256":
			return str(&p.InputSHA256)
		case "input_chars":
			return num64(&p.InputChars)
		}
		return nil
	})
}

func (p *RunFinished) decodeJSON(r *strictjson.Reader) error {
	return fields(r, func(k string) func(*strictjson.Reader) error {
		switch k {
		case "run_id":
			return str(&p.RunID)
		case "scope_key":
			return str(&p.ScopeKey)
		case "status":
			return str(&p.Status)
		case "stage":
			return str(&p.Stage)
		case "ended_at":
			return str(&p.EndedAt)
		case "duration_ms":
			return num64(&p.DurationMS)
		case "diagnostic":
			return str(&p.Diagnostic)
		case "input_sha256":
			return str(&p.InputSHA256)
		case "input_chars":
			return num64(&p.InputChars)
		case "telemetry":
			return func(r *strictjson.Reader) error {
				t := &RunTelemetry{}
				p.Telemetry = t
				return fields(r, func(k string) func(*strictjson.Reader) error {
					switch k {
					case "query_class":
						return str(&t.QueryClass)
					case "result_count":
						t.ResultCount = new(int)
						return num(t.ResultCount)
					case "receipt_id":
						return str(&t.ReceiptID)
					case "items":
						t.Items = new(int64)
						return num64(t.Items)
					}
					return nil
				})
			}
		}
		return nil
	})
}
