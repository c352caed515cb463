package projections

import (
	"encoding/json"

	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/events/strictjson"
)

// Hand-written codecs of the projection records a preflight reads and
// writes (the receipt index entry and proof, the harness state, the
// recorded program, the store identity), as manifest_codec.go is for the
// manifest record: encoding/json's first use of each type (its field
// cache, by reflection) cost a hook more than the rest of its fold. The
// encoders write json.Marshal's bytes (the stored form is unchanged); the
// decoders read those bytes without reflection and hand anything else to
// json.Unmarshal, so a record decodes exactly as before
// (records_codec_test.go holds both to encoding/json, and fuzzes the
// decoders).

// decodeJSONRecord decodes a stored record with its hand-written field
// table (fields returns the reader of each key's value into v); whatever
// that does not read, json.Unmarshal decodes, for the exact result or
// error.
func decodeJSONRecord[T any](raw []byte, fields func(v *T) func(key []byte) func(*strictjson.Reader) error) (T, error) {
	if v, ok := fastRecord(raw, fields); ok {
		return v, nil
	}
	var v T
	err := json.Unmarshal(raw, &v)
	return v, err
}

// fastRecord is decodeJSONRecord's path without reflection: ok is false
// when the field table does not read raw.
func fastRecord[T any](raw []byte, fields func(v *T) func(key []byte) func(*strictjson.Reader) error) (v T, ok bool) {
	r := strictjson.NewReader(raw, strictjson.Limits{})
	err := r.Fields(fields(&v))
	if err == nil {
		err = r.End()
	}
	return v, err == nil
}

var (
	strTo    = strictjson.StringTo
	int64To  = strictjson.Int64To
	uint64To = strictjson.Uint64To
)

// stringsTo reads an array of strings into dst ([] as an empty slice, as
// json.Unmarshal leaves it).
func stringsTo(dst *[]string) func(*strictjson.Reader) error {
	return func(r *strictjson.Reader) error {
		*dst = []string{}
		return r.Array(func(int) error {
			b, err := r.String()
			*dst = append(*dst, string(b))
			return err
		})
	}
}

func appendReceiptEntry(b []byte, e *receipt.Entry) []byte {
	o := strictjson.Object{B: b}
	o.Str("receipt_id", e.ReceiptID)
	o.Str("harness_id", e.HarnessID)
	o.Str("worker", e.Worker)
	o.Str("recorded_at", e.RecordedAt)
	if e.Path != "" {
		o.Str("path", e.Path)
	}
	o.Str("sha256", e.SHA256)
	o.Str("state", e.State)
	o.Str("status", e.Status)
	o.Uint("position", e.Position)
	if e.Adopted {
		o.Bool("adopted", true)
	}
	return o.End()
}

func decodeReceiptEntry(raw []byte) (receipt.Entry, error) {
	return decodeJSONRecord(raw, receiptEntryFields)
}

func receiptEntryFields(e *receipt.Entry) func([]byte) func(*strictjson.Reader) error {
	return func(k []byte) func(*strictjson.Reader) error {
		switch string(k) {
		case "receipt_id":
			return strTo(&e.ReceiptID)
		case "harness_id":
			return strTo(&e.HarnessID)
		case "worker":
			return strTo(&e.Worker)
		case "recorded_at":
			return strTo(&e.RecordedAt)
		case "path":
			return strTo(&e.Path)
		case "sha256":
			return strTo(&e.SHA256)
		case "state":
			return strTo(&e.State)
		case "status":
			return strTo(&e.Status)
		case "position":
			return uint64To(&e.Position)
		case "adopted":
			return strictjson.BoolTo(&e.Adopted)
		}
		return nil
	}
}

func appendReceiptProof(b []byte, p *ReceiptProof) []byte {
	o := strictjson.Object{B: b}
	o.Uint("epoch", p.Epoch)
	if p.LastAt != "" {
		o.Str("last_at", p.LastAt)
	}
	if p.NewestAt != "" {
		o.Str("newest_at", p.NewestAt)
	}
	if p.NewestID != "" {
		o.Str("newest_id", p.NewestID)
	}
	return o.End()
}

func decodeReceiptProof(raw []byte) (ReceiptProof, error) {
	return decodeJSONRecord(raw, receiptProofFields)
}

func receiptProofFields(p *ReceiptProof) func([]byte) func(*strictjson.Reader) error {
	return func(k []byte) func(*strictjson.Reader) error {
		switch string(k) {
		case "epoch":
			return uint64To(&p.Epoch)
		case "last_at":
			return strTo(&p.LastAt)
		case "newest_at":
			return strTo(&p.NewestAt)
		case "newest_id":
			return strTo(&p.NewestID)
		}
		return nil
	}
}

func appendHarness(b []byte, h *Harness) []byte {
	o := strictjson.Object{B: b}
	o.Str("state", h.State)
	list := func(k string, vs []string) {
		if len(vs) == 0 {
			return
		}
		o.Key(k)
		o.B = append(o.B, '[')
		for i, v := range vs {
			if i > 0 {
				o.B = append(o.B, ',')
			}
			o.B = strictjson.AppendString(o.B, v)
		}
		o.B = append(o.B, ']')
	}
	list("markers", h.Markers)
	if h.Reason != "" {
		o.Str("reason", h.Reason)
	}
	list("paths", h.Paths)
	return o.End()
}

func decodeHarness(raw []byte) (Harness, error) { return decodeJSONRecord(raw, harnessFields) }

func harnessFields(h *Harness) func([]byte) func(*strictjson.Reader) error {
	return func(k []byte) func(*strictjson.Reader) error {
		switch string(k) {
		case "state":
			return strTo(&h.State)
		case "markers":
			return stringsTo(&h.Markers)
		case "reason":
			return strTo(&h.Reason)
		case "paths":
			return stringsTo(&h.Paths)
		}
		return nil
	}
}

func decodeProgram(raw []byte) (Program, error) { return decodeJSONRecord(raw, programFields) }

func programFields(p *Program) func([]byte) func(*strictjson.Reader) error {
	return func(k []byte) func(*strictjson.Reader) error {
		switch string(k) {
		case "path":
			return strTo(&p.Path)
		case "sha256":
			return strTo(&p.SHA256)
		case "size":
			return int64To(&p.Size)
		case "inode":
			return uint64To(&p.Inode)
		case "mtime_ns":
			return int64To(&p.MtimeNS)
		case "ctime_ns":
			return int64To(&p.CtimeNS)
		case "position":
			return uint64To(&p.Position)
		}
		return nil
	}
}

func decodeManifestStore(raw []byte) (ManifestStore, error) {
	return decodeJSONRecord(raw, manifestStoreFields)
}

func manifestStoreFields(m *ManifestStore) func([]byte) func(*strictjson.Reader) error {
	return func(k []byte) func(*strictjson.Reader) error {
		switch string(k) {
		case "store_id":
			return strTo(&m.StoreID)
		case "project_root_fingerprint":
			return strTo(&m.ProjectRootFingerprint)
		}
		return nil
	}
}
