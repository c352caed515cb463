package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/tree-ring/tree-ring/events/strictjson"
)

// The published JSONL export format: a header line
//
//	{"type":"tree_ring_memory_export","schema_version":1,"plugin_version":…,"created_at":…,"memory_count":…,"sensitive_included":…}
//
// then one {"type":"memory_event","memory":{…Record…}} per line.
// Import also accepts raw Record lines (no envelope), as the
// published importer does.

// Export line types.
const (
	ExportHeaderType = "tree_ring_memory_export"
	ExportMemoryType = "memory_event"
)

// MaxLineBytes bounds one import line.
const MaxLineBytes = 1 << 20

// ExportHeader is the first line of an export.
type ExportHeader struct {
	Type              string `json:"type"`
	SchemaVersion     int    `json:"schema_version"`
	PluginVersion     string `json:"plugin_version"`
	CreatedAt         string `json:"created_at"`
	MemoryCount       int    `json:"memory_count"`
	SensitiveIncluded bool   `json:"sensitive_included"`
}

// ExportLine is every later line of an export.
type ExportLine struct {
	Type   string  `json:"type"`
	Memory *Record `json:"memory"`
}

// MarshalJSONLine encodes v as one line of compact JSON without HTML
// escaping (as serde_json writes it), with a trailing newline.
func MarshalJSONLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ImportLine is one decoded import line: a header or a memory.
type ImportLine struct {
	Header *ExportHeader
	Memory *Record
}

// wireMemory mirrors Record with every field optional, so that
// defaults apply to absent or null fields as in the published serde model.
type wireMemory struct {
	ID           *string     `json:"id"`
	CreatedAt    *string     `json:"created_at"`
	UpdatedAt    *string     `json:"updated_at"`
	Project      *string     `json:"project"`
	AgentProfile *string     `json:"agent_profile"`
	WorkflowID   *string     `json:"workflow_id"`
	SessionID    *string     `json:"session_id"`
	OperationID  *string     `json:"operation_id"`
	Scope        *string     `json:"scope"`
	Ring         *string     `json:"ring"`
	EventType    *string     `json:"event_type"`
	Summary      *string     `json:"summary"`
	Details      *string     `json:"details"`
	Source       *wireSource `json:"source"`
	Tags         []string    `json:"tags"`
	Salience     *float64    `json:"salience"`
	Confidence   *float64    `json:"confidence"`
	Sensitivity  *string     `json:"sensitivity"`
	Retention    *string     `json:"retention"`
	ExpiresAt    *string     `json:"expires_at"`
	Supersedes   []string    `json:"supersedes"`
	SupersededBy *string     `json:"superseded_by"`
	Links        []Link      `json:"links"`
	Review       *Review     `json:"review"`
}

type wireSource struct {
	Type  *string `json:"type"`
	Ref   *string `json:"ref"`
	Quote *string `json:"quote"`
}

// DecodeImportLine strictly decodes one line of an export or of a raw
// memory JSONL file: bounded size, unknown and duplicate keys rejected and
// named, required fields present. The memory is not yet validated (see
// Record.Validate); created_at and updated_at default to now when
// absent. It never includes field values in its errors.
func DecodeImportLine(line []byte, now string) (ImportLine, error) {
	if len(line) > MaxLineBytes {
		return ImportLine{}, fmt.Errorf("line is %d bytes, limit %d", len(line), MaxLineBytes)
	}
	// encoding/json would silently replace invalid UTF-8 with U+FFFD; an
	// export written by the published plugin is always valid UTF-8.
	if !utf8.Valid(line) {
		return ImportLine{}, errors.New("line is not valid UTF-8")
	}
	// One pass of the top-level object finds the line's type (and an
	// export line's memory, unparsed); the line is then strictly decoded
	// (strictjson: exact keys, duplicates and depth) as the header or the
	// memory it declares, so a memory is decoded once.
	var probe lineProbe
	if err := probe.read(line); err != nil {
		return ImportLine{}, fmt.Errorf("decode: %w", err)
	}
	switch {
	case probe.Type == nil:
		var w wireMemory
		if err := strictjson.Unmarshal(line, &w); err != nil {
			return ImportLine{}, fmt.Errorf("memory: %w", err)
		}
		m, err := w.record(now)
		return ImportLine{Memory: m}, err
	case *probe.Type == ExportHeaderType:
		var h struct {
			Type              string  `json:"type"`
			SchemaVersion     *int    `json:"schema_version"`
			PluginVersion     *string `json:"plugin_version"`
			CreatedAt         *string `json:"created_at"`
			MemoryCount       *int    `json:"memory_count"`
			SensitiveIncluded *bool   `json:"sensitive_included"`
		}
		if err := strictjson.Unmarshal(line, &h); err != nil {
			return ImportLine{}, fmt.Errorf("export header: %w", err)
		}
		for _, f := range []struct {
			name    string
			present bool
		}{{"schema_version", h.SchemaVersion != nil}, {"plugin_version", h.PluginVersion != nil}, {"created_at", h.CreatedAt != nil},
			{"memory_count", h.MemoryCount != nil}, {"sensitive_included", h.SensitiveIncluded != nil}} {
			if !f.present {
				return ImportLine{}, fmt.Errorf("export header: missing key %q", f.name)
			}
		}
		if *h.SchemaVersion != 1 {
			return ImportLine{}, fmt.Errorf("export header: schema_version %d is not supported", *h.SchemaVersion)
		}
		if *h.MemoryCount < 0 {
			return ImportLine{}, errors.New("export header: negative memory_count")
		}
		return ImportLine{Header: &ExportHeader{Type: h.Type, SchemaVersion: 1, PluginVersion: *h.PluginVersion,
			CreatedAt: *h.CreatedAt, MemoryCount: *h.MemoryCount, SensitiveIncluded: *h.SensitiveIncluded}}, nil
	case *probe.Type == ExportMemoryType:
		if probe.unknown != "" {
			return ImportLine{}, fmt.Errorf("memory_event: %w", &strictjson.UnknownKeyError{Key: probe.unknown})
		}
		if len(probe.memory) == 0 || string(probe.memory) == "null" {
			return ImportLine{}, errors.New(`memory_event: missing key "memory"`)
		}
		var w wireMemory
		if err := strictjson.Unmarshal(probe.memory, &w); err != nil {
			return ImportLine{}, fmt.Errorf("memory: %w", err)
		}
		m, err := w.record(now)
		return ImportLine{Memory: m}, err
	default:
		return ImportLine{}, errors.New(`unknown line type (want "tree_ring_memory_export" or "memory_event")`)
	}
}

// lineProbe is what one pass over a line's top-level object finds: its
// "type" (nil when absent: a raw memory line), the raw value of "memory"
// and the first other key (an export line allows no other key; a raw
// memory line's keys are checked by its own decoding).
type lineProbe struct {
	Type    *string
	memory  []byte
	unknown string
}

func (p *lineProbe) read(line []byte) error {
	r := strictjson.NewReader(line, strictjson.Limits{})
	err := r.Object(func(key []byte) error {
		switch string(key) {
		case "type":
			v, err := r.String()
			if err != nil {
				return err
			}
			t := string(v)
			p.Type = &t
			return nil
		case "memory":
			var err error
			p.memory, err = r.Raw()
			return err
		}
		if p.unknown == "" {
			p.unknown = string(key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return r.End()
}

// record applies the published defaults.
func (w *wireMemory) record(now string) (*Record, error) {
	switch {
	case w.ID == nil:
		return nil, errors.New(`memory: missing key "id"`)
	case w.Summary == nil:
		return nil, errors.New("summary is required")
	case w.EventType == nil:
		return nil, errors.New("event_type is required")
	}
	or := func(p *string, def string) string {
		if p == nil {
			return def
		}
		return *p
	}
	r := &Record{
		ID: *w.ID, CreatedAt: or(w.CreatedAt, now), UpdatedAt: or(w.UpdatedAt, or(w.CreatedAt, now)),
		Project: w.Project, AgentProfile: w.AgentProfile, WorkflowID: w.WorkflowID, SessionID: w.SessionID,
		OperationID: w.OperationID, Scope: or(w.Scope, DefaultScope), Ring: or(w.Ring, DefaultRing),
		EventType: *w.EventType, Summary: *w.Summary, Details: or(w.Details, ""),
		Source: Source{Type: DefaultSourceType}, Tags: nonNil(w.Tags),
		Salience: DefaultSalience, Confidence: DefaultConfidence,
		Sensitivity: or(w.Sensitivity, DefaultSensitivity), Retention: or(w.Retention, DefaultRetention),
		ExpiresAt: w.ExpiresAt, Supersedes: nonNil(w.Supersedes), SupersededBy: w.SupersededBy,
		Links: nonNilLinks(w.Links),
	}
	if w.Source != nil {
		r.Source = Source{Type: or(w.Source.Type, DefaultSourceType), Ref: or(w.Source.Ref, ""), Quote: or(w.Source.Quote, "")}
	}
	if w.Salience != nil {
		r.Salience = *w.Salience
	}
	if w.Confidence != nil {
		r.Confidence = *w.Confidence
	}
	if w.Review != nil {
		r.Review = *w.Review
	}
	return r, nil
}
