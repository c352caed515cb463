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
// appendPayload) has a hand-written decoder: the hook's payloads, and
// memory.captured, which every memory import and rebuild decodes once per
// memory. Each reads one object of exactly the keys json.Marshal writes
// for the type, each of its kind (null included in no kind), into the zero
// value p points to; an error means only that the fast path does not apply
// (the caller decodes again by reflection, for the exact result or error).
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
	case *MemoryCaptured:
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

// The decoders read each member with one call of the Reader from a
// function literal that captures it, never handing the Reader to a
// function value: so decodeFast's Reader stays on its stack, and no
// member costs a closure (strictjson.Reader.Fields).

func (p *PreflightSucceeded) decodeJSON(r *strictjson.Reader) error {
	return r.Object(func(k []byte) (err error) {
		switch string(k) {
		case "from":
			p.From, err = r.Str()
		case "to":
			p.To, err = r.Str()
		case "harness_id":
			p.HarnessID, err = r.Str()
		case "worker_key_fingerprint":
			p.WorkerKeyFingerprint, err = r.Str()
		case "receipt_id":
			p.ReceiptID, err = r.Str()
		case "query_class":
			p.QueryClass, err = r.Str()
		case "result_count":
			p.ResultCount, err = r.GoInt()
		case "selected_memory_ids_sha256":
			p.SelectedMemoryIDsSHA256, err = r.Str()
		case "duration_ms":
			p.DurationMS, err = r.Int()
		case "task_hint_sha256":
			p.TaskHintSHA256, err = r.Str()
		case "task_hint_chars":
			p.TaskHintChars, err = r.GoInt()
		default:
			return r.UnknownKey(k)
		}
		return err
	})
}

func (p *ReceiptRecorded) decodeJSON(r *strictjson.Reader) error {
	return r.Object(func(k []byte) (err error) {
		switch string(k) {
		case "harness_id":
			p.HarnessID, err = r.Str()
		case "receipt_id":
			p.ReceiptID, err = r.Str()
		case "protocol_version":
			p.ProtocolVersion, err = r.GoInt()
		case "adapter_version":
			p.AdapterVersion, err = r.Str()
		case "bridge_fingerprint":
			p.BridgeFingerprint, err = r.Str()
		case "store_id":
			p.StoreID, err = r.Str()
		case "project_root_fingerprint":
			p.ProjectRootFingerprint, err = r.Str()
		case "worker_key_fingerprint":
			p.WorkerKeyFingerprint, err = r.Str()
		case "state":
			p.State, err = r.Str()
		case "query_class":
			p.QueryClass, err = r.Str()
		case "result_count":
			p.ResultCount, err = r.GoInt()
		case "selected_memory_ids_sha256":
			p.SelectedMemoryIDsSHA256, err = r.Str()
		case "duration_ms":
			p.DurationMS, err = r.Int()
		case "status":
			p.Status, err = r.Str()
		case "sha256":
			p.SHA256, err = r.Str()
		case "recorded_at":
			p.RecordedAt, err = r.Str()
		case "path":
			p.Path, err = r.Str()
		case "session":
			s := &ReceiptSession{}
			p.Session = s
			err = r.Object(func(k []byte) (err error) {
				switch string(k) {
				case "agent_profile":
					s.AgentProfile, err = r.Str()
				case "workflow_id":
					s.WorkflowID, err = r.Str()
				case "session_id":
					s.SessionID, err = r.Str()
				default:
					return r.UnknownKey(k)
				}
				return err
			})
		default:
			return r.UnknownKey(k)
		}
		return err
	})
}

func (p *ReceiptPruned) decodeJSON(r *strictjson.Reader) error {
	return r.Object(func(k []byte) (err error) {
		switch string(k) {
		case "harness_id":
			p.HarnessID, err = r.Str()
		case "worker_key_fingerprint":
			p.WorkerKeyFingerprint, err = r.Str()
		case "receipt_id":
			p.ReceiptID, err = r.Str()
		case "reason":
			p.Reason, err = r.Str()
		default:
			return r.UnknownKey(k)
		}
		return err
	})
}

func (p *RunStarted) decodeJSON(r *strictjson.Reader) error {
	return r.Object(func(k []byte) (err error) {
		switch string(k) {
		case "run_id":
			p.RunID, err = r.Str()
		case "scope_key":
			p.ScopeKey, err = r.Str()
		case "command":
			p.Command, err = r.Str()
		case "harness":
			p.Harness, err = r.Str()
		case "stage":
			p.Stage, err = r.Str()
		case "pid":
			p.PID, err = r.GoInt()
		case "started_at":
			p.StartedAt, err = r.Str()
		case "input_sha256":
			p.InputSHA256, err = r.Str()
		case "input_chars":
			p.InputChars, err = r.Int()
		default:
			return r.UnknownKey(k)
		}
		return err
	})
}

func (p *RunFinished) decodeJSON(r *strictjson.Reader) error {
	return r.Object(func(k []byte) (err error) {
		switch string(k) {
		case "run_id":
			p.RunID, err = r.Str()
		case "scope_key":
			p.ScopeKey, err = r.Str()
		case "status":
			p.Status, err = r.Str()
		case "stage":
			p.Stage, err = r.Str()
		case "ended_at":
			p.EndedAt, err = r.Str()
		case "duration_ms":
			p.DurationMS, err = r.Int()
		case "diagnostic":
			p.Diagnostic, err = r.Str()
		case "input_sha256":
			p.InputSHA256, err = r.Str()
		case "input_chars":
			p.InputChars, err = r.Int()
		case "telemetry":
			t := &RunTelemetry{}
			p.Telemetry = t
			err = r.Object(func(k []byte) (err error) {
				switch string(k) {
				case "query_class":
					t.QueryClass, err = r.Str()
				case "result_count":
					n, err := r.GoInt()
					t.ResultCount = &n
					return err
				case "receipt_id":
					t.ReceiptID, err = r.Str()
				case "items":
					n, err := r.Int()
					t.Items = &n
					return err
				default:
					return r.UnknownKey(k)
				}
				return err
			})
		default:
			return r.UnknownKey(k)
		}
		return err
	})
}

func (p *MemoryCaptured) decodeJSON(r *strictjson.Reader) error {
	return r.Object(func(k []byte) (err error) {
		switch string(k) {
		case "memory_id":
			p.MemoryID, err = r.Str()
		case "body_sha256":
			p.BodySHA256, err = r.Str()
		case "created_at":
			p.CreatedAt, err = r.Str()
		case "updated_at":
			p.UpdatedAt, err = r.Str()
		case "project":
			p.Project, err = r.Str()
		case "agent_profile":
			p.AgentProfile, err = r.Str()
		case "workflow_id":
			p.WorkflowID, err = r.Str()
		case "session_id":
			p.SessionID, err = r.Str()
		case "operation_id":
			p.OperationID, err = r.Str()
		case "scope":
			p.Scope, err = r.Str()
		case "ring":
			p.Ring, err = r.Str()
		case "event_type":
			p.EventType, err = r.Str()
		case "source_type":
			p.SourceType, err = r.Str()
		case "salience":
			p.Salience, err = r.Float()
		case "confidence":
			p.Confidence, err = r.Float()
		case "sensitivity":
			p.Sensitivity, err = r.Str()
		case "retention":
			p.Retention, err = r.Str()
		case "expires_at":
			p.ExpiresAt, err = r.Str()
		case "supersedes":
			// [] is an empty slice, not nil, as json.Unmarshal leaves it.
			p.Supersedes = []string{}
			err = r.Array(func(int) error {
				s, err := r.Str()
				p.Supersedes = append(p.Supersedes, s)
				return err
			})
		case "needs_review":
			p.NeedsReview, err = r.Bool()
		case "reviewed_at":
			p.ReviewedAt, err = r.Str()
		case "redacted":
			p.Redacted, err = r.Bool()
		case "origin":
			p.Origin, err = r.Str()
		default:
			return r.UnknownKey(k)
		}
		return err
	})
}
