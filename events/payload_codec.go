package events

import (
	"encoding/json"

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

// omitStr and omitInt write members tagged omitempty.
func omitStr(o *strictjson.Object, k, v string) {
	if v != "" {
		o.Str(k, v)
	}
}

func omitInt(o *strictjson.Object, k string, v int64) {
	if v != 0 {
		o.Int(k, v)
	}
}

func (p *PreflightSucceeded) appendJSON(b []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	o := strictjson.Object{B: b}
	o.Str("from", p.From)
	o.Str("to", p.To)
	o.Str("harness_id", p.HarnessID)
	o.Str("worker_key_fingerprint", p.WorkerKeyFingerprint)
	o.Str("receipt_id", p.ReceiptID)
	o.Str("query_class", p.QueryClass)
	o.Int("result_count", int64(p.ResultCount))
	o.Str("selected_memory_ids_sha256", p.SelectedMemoryIDsSHA256)
	o.Int("duration_ms", p.DurationMS)
	omitStr(&o, "task_hint_sha256", p.TaskHintSHA256)
	omitInt(&o, "task_hint_chars", int64(p.TaskHintChars))
	return o.End()
}

func (p *ReceiptRecorded) appendJSON(b []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	o := strictjson.Object{B: b}
	o.Str("harness_id", p.HarnessID)
	o.Str("receipt_id", p.ReceiptID)
	o.Int("protocol_version", int64(p.ProtocolVersion))
	o.Str("adapter_version", p.AdapterVersion)
	o.Str("bridge_fingerprint", p.BridgeFingerprint)
	o.Str("store_id", p.StoreID)
	o.Str("project_root_fingerprint", p.ProjectRootFingerprint)
	o.Str("worker_key_fingerprint", p.WorkerKeyFingerprint)
	o.Str("state", p.State)
	o.Str("query_class", p.QueryClass)
	o.Int("result_count", int64(p.ResultCount))
	o.Str("selected_memory_ids_sha256", p.SelectedMemoryIDsSHA256)
	o.Int("duration_ms", p.DurationMS)
	o.Str("status", p.Status)
	o.Str("sha256", p.SHA256)
	omitStr(&o, "recorded_at", p.RecordedAt)
	if s := p.Session; s != nil {
		o.Key("session")
		so := strictjson.Object{B: o.B}
		so.Str("agent_profile", s.AgentProfile)
		so.Str("workflow_id", s.WorkflowID)
		so.Str("session_id", s.SessionID)
		o.B = so.End()
	}
	omitStr(&o, "path", p.Path)
	return o.End()
}

func (p *ReceiptPruned) appendJSON(b []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	o := strictjson.Object{B: b}
	o.Str("harness_id", p.HarnessID)
	o.Str("worker_key_fingerprint", p.WorkerKeyFingerprint)
	o.Str("receipt_id", p.ReceiptID)
	o.Str("reason", p.Reason)
	return o.End()
}

func (p *RunStarted) appendJSON(b []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	o := strictjson.Object{B: b}
	o.Str("run_id", p.RunID)
	o.Str("scope_key", p.ScopeKey)
	o.Str("command", p.Command)
	omitStr(&o, "harness", p.Harness)
	o.Str("stage", p.Stage)
	o.Int("pid", int64(p.PID))
	o.Str("started_at", p.StartedAt)
	omitStr(&o, "input_sha256", p.InputSHA256)
	omitInt(&o, "input_chars", p.InputChars)
	return o.End()
}

func (p *RunFinished) appendJSON(b []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	o := strictjson.Object{B: b}
	o.Str("run_id", p.RunID)
	o.Str("scope_key", p.ScopeKey)
	o.Str("status", p.Status)
	o.Str("stage", p.Stage)
	o.Str("ended_at", p.EndedAt)
	o.Int("duration_ms", p.DurationMS)
	omitStr(&o, "diagnostic", p.Diagnostic)
	omitStr(&o, "input_sha256", p.InputSHA256)
	omitInt(&o, "input_chars", p.InputChars)
	if t := p.Telemetry; t != nil {
		o.Key("telemetry")
		to := strictjson.Object{B: o.B}
		omitStr(&to, "query_class", t.QueryClass)
		if t.ResultCount != nil {
			to.Int("result_count", int64(*t.ResultCount))
		}
		omitStr(&to, "receipt_id", t.ReceiptID)
		if t.Items != nil {
			to.Int("items", *t.Items)
		}
		o.B = to.End()
	}
	return o.End()
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

var (
	str   = strictjson.StringTo
	num   = strictjson.IntTo
	num64 = strictjson.Int64To
)

func (p *PreflightSucceeded) decodeJSON(r *strictjson.Reader) error {
	return r.Fields(func(k []byte) func(*strictjson.Reader) error {
		switch string(k) {
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
	return r.Fields(func(k []byte) func(*strictjson.Reader) error {
		switch string(k) {
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
				return r.Fields(func(k []byte) func(*strictjson.Reader) error {
					switch string(k) {
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
	return r.Fields(func(k []byte) func(*strictjson.Reader) error {
		switch string(k) {
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
	return r.Fields(func(k []byte) func(*strictjson.Reader) error {
		switch string(k) {
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
	return r.Fields(func(k []byte) func(*strictjson.Reader) error {
		switch string(k) {
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
				return r.Fields(func(k []byte) func(*strictjson.Reader) error {
					switch string(k) {
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
