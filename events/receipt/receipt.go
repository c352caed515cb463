// Package receipt is the activation receipt: the domain type, its file
// codec (the pretty JSON under .tree-ring/activation/receipts), the
// summary a JSON preflight response carries, its event payload
// (receipt.recorded, receipt.adopted: events.ReceiptRecorded, built by
// Receipt.Recorded) and the entry the receipt index stores (Entry). A new
// receipt field is added here and in this package's tests; the payload
// struct stays in events' catalogue beside the other payloads, whose
// schema versions events owns.
//
// It sits under events, not in the preflight adapter, because the
// adapters, the projections and the state machine all read receipts and
// may share only what events' family defines (docs/architecture.md).
package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/tree-ring/tree-ring/events/strictjson"
)

// Receipt constants.
const (
	SchemaVersion = 1
	StatusSuccess = events.ReceiptStatusSuccess
	// MaxBytes bounds a receipt file read back from disk.
	MaxBytes = 16 << 10
	// MaxResults is the most memories one preflight selects.
	MaxResults = 8
)

// Dir holds the receipt files, one directory per harness and worker:
// <harness>/<sha256(agent_profile)>/<receipt_id>.json.
const Dir = ".tree-ring/activation/receipts"

// Path is the receipt's project-relative file path.
func (r Receipt) Path() string { return FilePath(r.HarnessID, r.Session.AgentProfile, r.ReceiptID) }

// FilePath is .tree-ring/activation/receipts/<harness>/<sha256(agent_profile)>/<receipt_id>.json.
func FilePath(harness, agentProfile, receiptID string) string {
	return WorkerDir(harness, agentProfile) + "/" + receiptID + ".json"
}

// WorkerDir is the directory of a harness/worker's receipts.
func WorkerDir(harness, agentProfile string) string {
	sum := sha256.Sum256([]byte(agentProfile))
	return Dir + "/" + harness + "/" + hex.EncodeToString(sum[:])
}

// TimeFormat is recorded_at's format: RFC 3339, UTC, whole seconds.
const TimeFormat = events.ReceiptTimeFormat

// FormatTime renders t as a receipt's recorded_at.
func FormatTime(t time.Time) string { return events.ReceiptTime(t) }

// ParseTime parses a recorded_at in exactly the receipt format (time.Parse
// alone would also accept a fractional second).
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(TimeFormat, s)
	if err == nil && t.Format(TimeFormat) != s {
		err = fmt.Errorf("recorded_at %q is not in whole seconds", s)
	}
	return t, err
}

// Session is the worker's session identity a receipt names (normalized:
// see SafeIdent); the ledger's payload carries the same type.
type Session = events.ReceiptSession

// Receipt is the persisted receipt, field order as on the wire. It holds
// no prompt, hint, recalled text, secret, absolute path or capability.
type Receipt struct {
	SchemaVersion           int     `json:"schema_version"`
	ProtocolVersion         int     `json:"protocol_version"`
	ReceiptID               string  `json:"receipt_id"`
	HarnessID               string  `json:"harness_id"`
	AdapterVersion          string  `json:"adapter_version"`
	BridgeFingerprint       string  `json:"bridge_fingerprint"`
	StoreID                 string  `json:"store_id"`
	ProjectRootFingerprint  string  `json:"project_root_fingerprint"`
	WorkerKeyFingerprint    string  `json:"worker_key_fingerprint"`
	Session                 Session `json:"session"`
	State                   string  `json:"state"`
	QueryClass              string  `json:"query_class"`
	ResultCount             int     `json:"result_count"`
	SelectedMemoryIDsSHA256 string  `json:"selected_memory_ids_sha256"`
	DurationMS              int64   `json:"duration_ms"`
	Status                  string  `json:"status"`
	RecordedAt              string  `json:"recorded_at"`
}

// Summary is the ActivationReceiptSummary a JSON preflight response
// carries: the receipt without its session identity and state.
type Summary struct {
	SchemaVersion           int    `json:"schema_version"`
	ProtocolVersion         int    `json:"protocol_version"`
	ReceiptID               string `json:"receipt_id"`
	HarnessID               string `json:"harness_id"`
	AdapterVersion          string `json:"adapter_version"`
	BridgeFingerprint       string `json:"bridge_fingerprint"`
	StoreID                 string `json:"store_id"`
	ProjectRootFingerprint  string `json:"project_root_fingerprint"`
	WorkerKeyFingerprint    string `json:"worker_key_fingerprint"`
	QueryClass              string `json:"query_class"`
	ResultCount             int    `json:"result_count"`
	SelectedMemoryIDsSHA256 string `json:"selected_memory_ids_sha256"`
	DurationMS              int64  `json:"duration_ms"`
	Status                  string `json:"status"`
	RecordedAt              string `json:"recorded_at"`
}

// Summary returns r's summary.
func (r Receipt) Summary() Summary {
	return Summary{
		SchemaVersion: r.SchemaVersion, ProtocolVersion: r.ProtocolVersion, ReceiptID: r.ReceiptID,
		HarnessID: r.HarnessID, AdapterVersion: r.AdapterVersion, BridgeFingerprint: r.BridgeFingerprint,
		StoreID: r.StoreID, ProjectRootFingerprint: r.ProjectRootFingerprint, WorkerKeyFingerprint: r.WorkerKeyFingerprint,
		QueryClass: r.QueryClass, ResultCount: r.ResultCount, SelectedMemoryIDsSHA256: r.SelectedMemoryIDsSHA256,
		DurationMS: r.DurationMS, Status: r.Status, RecordedAt: r.RecordedAt,
	}
}

// Encode returns the receipt file's bytes: pretty JSON (two spaces), no
// HTML escaping, a trailing newline, keys in field order.
func (r Receipt) Encode() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		panic(err) // a struct of strings and integers always encodes
	}
	return b.Bytes()
}

// Error is a receipt that cannot be read back or fails
// verification. Rule is the published rule number (1..8), or 0 for a
// malformed file.
type Error struct {
	Rule   int
	Reason string
}

func (e *Error) Error() string {
	if e.Rule == 0 {
		return "receipt is malformed: " + e.Reason
	}
	return fmt.Sprintf("receipt fails rule %d: %s", e.Rule, e.Reason)
}

func malformed(format string, a ...any) error {
	return &Error{Reason: fmt.Sprintf(format, a...)}
}

// Decode strictly decodes a receipt file: at most MaxBytes,
// no unknown or repeated keys, every field present, a receipt-<uuid> id,
// 64-hex digests, a query class from the approved set, 0..8 results, a
// recorded_at in the receipt format, safe session identity components.
func Decode(data []byte) (Receipt, error) {
	if len(data) > MaxBytes {
		return Receipt{}, malformed("larger than %d bytes", MaxBytes)
	}
	var r Receipt
	if err := strictjson.Unmarshal(data, &r); err != nil {
		var uk *strictjson.UnknownKeyError
		if errors.As(err, &uk) {
			return Receipt{}, malformed("unknown key%s", memory.EchoKey(uk.Key))
		}
		return Receipt{}, malformed("not a receipt object")
	}
	if k := absent(data); k != "" {
		return Receipt{}, malformed("missing %s", k)
	}
	if err := r.check(); err != nil {
		return Receipt{}, err
	}
	return r, nil
}

// check applies the file's value rules to a decoded receipt.
func (r Receipt) check() error {
	switch {
	case !ValidID(r.ReceiptID):
		return malformed("receipt_id is not receipt-<uuid>")
	case !Hex64(r.BridgeFingerprint) || !Hex64(r.ProjectRootFingerprint) || !Hex64(r.WorkerKeyFingerprint) || !Hex64(r.SelectedMemoryIDsSHA256):
		return malformed("a fingerprint is not 64 lowercase hex")
	case r.QueryClass != "task_hint" && r.QueryClass != "startup_fallback":
		return malformed("query_class is not an approved class")
	case r.ResultCount < 0 || r.ResultCount > MaxResults:
		return malformed("receipt result count exceeds preflight limit")
	case r.DurationMS < 0:
		return malformed("duration_ms is negative")
	case !normalizedSession(r.Session):
		return malformed("session identity is not normalized")
	}
	if _, err := ParseTime(r.RecordedAt); err != nil {
		return malformed("recorded_at is not an RFC 3339 UTC time in whole seconds")
	}
	return nil
}

// normalizedSession reports whether s is as identity normalization leaves
// it: safe components, or a subagent's "{harness}:{type}:{digest}" profile.
func normalizedSession(s Session) bool {
	return (SafeIdent(s.AgentProfile) || SubagentProfile(s.AgentProfile)) && SafeIdent(s.WorkflowID) && SafeIdent(s.SessionID)
}

// memberKeys returns the receipt file's members and the session's, in
// order: every one is required. Only Decode needs them, so a process that
// writes a receipt (every hook) does not reflect over the types at start-up.
var memberKeys = sync.OnceValues(func() (file, session []string) {
	return memberNames(reflect.TypeFor[Receipt]()), memberNames(reflect.TypeFor[Session]())
})

func memberNames(t reflect.Type) []string {
	names := make([]string, t.NumField())
	for i := range names {
		names[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return names
}

// absent is the first member of the file (or "session", for one of the
// session's) that data, a document that decodes as a Receipt, lacks or
// holds as null; "" when none.
func absent(data []byte) string {
	fileKeys, sessionKeys := memberKeys()
	var top map[string]json.RawMessage
	if strictjson.Unmarshal(data, &top) != nil {
		return fileKeys[0]
	}
	for _, k := range fileKeys {
		v, ok := top[k]
		if !ok || string(v) == "null" {
			return k
		}
		if k != "session" {
			continue
		}
		var session map[string]json.RawMessage
		if json.Unmarshal(v, &session) != nil {
			return k
		}
		for _, sk := range sessionKeys {
			if sv, ok := session[sk]; !ok || string(sv) == "null" {
				return k
			}
		}
	}
	return ""
}

// SubagentProfile accepts the "{harness}:{type}:{16 hex}" profiles
// HookIdentity derives, which may be longer than a plain identifier: the
// harness runs to the first ':' (harness ids have none), the digest is
// the 16 lowercase hex after the last, and the type is everything between
// (a normalized value, which may itself hold ':', as Claude Code's
// "plugin:agent" types do).
func SubagentProfile(p string) bool {
	harness, rest, ok := strings.Cut(p, ":")
	i := strings.LastIndexByte(rest, ':')
	if !ok || i < 0 {
		return false
	}
	typ, digest := rest[:i], rest[i+1:]
	return SafeIdent(harness) && SafeIdent(typ) && len(digest) == 16 && lowerHex(digest)
}

// Hex64 reports whether s is a sha256 digest in lowercase hex.
func Hex64(s string) bool { return len(s) == 64 && lowerHex(s) }

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ValidID reports whether id is "receipt-<uuid v4>".
func ValidID(id string) bool {
	u, ok := strings.CutPrefix(id, "receipt-")
	return ok && events.ValidStoreID(u)
}

// MaxIdentBytes bounds a session identity value kept as is.
const MaxIdentBytes = 128

// SafeIdent reports whether v is kept as is by identity normalization: at
// most 128 bytes of [A-Za-z0-9-_.:@], not "." or "..", and normal
// sensitivity.
func SafeIdent(v string) bool {
	if v == "" || len(v) > MaxIdentBytes || v == "." || v == ".." {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !identByte(v[i]) {
			return false
		}
	}
	return memory.InspectText(v) == memory.SensitivityNormal
}

// identByte reports whether c may appear in a kept identity value.
func identByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':' || c == '@'
}

// Recorded is r as receipt.recorded and receipt.adopted carry it: every
// field but the constant schema_version, with the SHA-256 of the file's
// exact bytes and its project-relative path.
func (r Receipt) Recorded(sha256, path string) events.ReceiptRecorded {
	s := r.Session
	return events.ReceiptRecorded{
		HarnessID: r.HarnessID, ReceiptID: r.ReceiptID, ProtocolVersion: r.ProtocolVersion, AdapterVersion: r.AdapterVersion,
		BridgeFingerprint: r.BridgeFingerprint, StoreID: r.StoreID, ProjectRootFingerprint: r.ProjectRootFingerprint,
		WorkerKeyFingerprint: r.WorkerKeyFingerprint, State: r.State, QueryClass: r.QueryClass, ResultCount: r.ResultCount,
		SelectedMemoryIDsSHA256: r.SelectedMemoryIDsSHA256, DurationMS: r.DurationMS, Status: r.Status,
		SHA256: sha256, RecordedAt: r.RecordedAt, Session: &s, Path: path,
	}
}
