package events

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Memory facts. A memory's free text (summary, details, source ref and
// quote, tags, links, review notes) is never in an event: it lives in the
// ledger's content-addressed bodies bucket as a MemoryBody, and
// MemoryCaptured carries its SHA-256. Forgetting deletes the body, so the
// text is gone for good while the hash chain, which covers only the digest,
// still verifies. Events keep what the index and the idempotency rules need:
// identifiers, enumerations, numbers and timestamps.
//
// The memory model (the published record, its validation, sensitivity
// detection, wire format, redaction and the write rules of remember,
// capture and import) is package events/memory. This file keeps the facts
// and the field rules their Check shares with the record's Validate, so
// that the ledger validates every memory event without the model.

// Enumerations of the published memory model.
var (
	MemoryRings         = []string{"cambium", "outer", "inner", "heartwood", "scar", "seed"}
	MemoryScopes        = []string{"global", "project", "agent", "session", "workflow", "tool", "eval", "manual", "dox", "revolve"}
	MemorySensitivities = []string{"normal", "private", "secret", "health", "financial", "legal", "personal_identifier"}
	MemoryRetentions    = []string{"ephemeral", "normal", "durable", "user_pinned", "forget_after_date"}
)

// Forget modes.
const (
	ForgetDelete = "delete"
	ForgetRedact = "redact"
)

// Origins of a captured memory (provenance only).
const (
	OriginRemember = "remember"
	OriginCapture  = "capture"
	OriginImport   = "import"
)

// MaxMemorySupersedes bounds the supersedes list of one memory.
const MaxMemorySupersedes = 64

// MaxIdentityChars (published) and MaxSourceTypeChars (ours) bound identity
// fields and labels in Unicode characters.
const (
	MaxIdentityChars   = 256
	MaxSourceTypeChars = 64
)

// MemoryCaptured records a memory. Empty strings stand for the published
// model's nulls. The text is in the body whose digest is BodySHA256.
type MemoryCaptured struct {
	MemoryID     string   `json:"memory_id"`
	BodySHA256   string   `json:"body_sha256"`
	CreatedAt    string   `json:"created_at"`
	UpdatedAt    string   `json:"updated_at"`
	Project      string   `json:"project,omitempty"`
	AgentProfile string   `json:"agent_profile,omitempty"`
	WorkflowID   string   `json:"workflow_id,omitempty"`
	SessionID    string   `json:"session_id,omitempty"`
	OperationID  string   `json:"operation_id,omitempty"`
	Scope        string   `json:"scope"`
	Ring         string   `json:"ring"`
	EventType    string   `json:"event_type"`
	SourceType   string   `json:"source_type"`
	Salience     float64  `json:"salience"`
	Confidence   float64  `json:"confidence"`
	Sensitivity  string   `json:"sensitivity"`
	Retention    string   `json:"retention"`
	ExpiresAt    string   `json:"expires_at,omitempty"`
	Supersedes   []string `json:"supersedes,omitempty"`
	NeedsReview  bool     `json:"needs_review,omitempty"`
	ReviewedAt   string   `json:"reviewed_at,omitempty"`
	// Redacted marks an imported row that was already redacted at its
	// source: it is stored as a tombstone and never recalled.
	Redacted bool   `json:"redacted,omitempty"`
	Origin   string `json:"origin"`
}

// Check validates the structure of a captured memory: identifiers,
// enumerations, limits, timestamps and scope invariants. It is the same rule
// set as MemoryRecord.Validate minus the text, which is not here.
func (p MemoryCaptured) Check() error {
	if err := ValidMemoryID(p.MemoryID); err != nil {
		return err
	}
	if !isHex64(p.BodySHA256) {
		return errors.New("body_sha256 is not 64 lowercase hex")
	}
	for _, ts := range []struct{ name, v string }{{"created_at", p.CreatedAt}, {"updated_at", p.UpdatedAt}} {
		if _, err := ParseMemoryTime(ts.v); err != nil {
			return fmt.Errorf("%s: %w", ts.name, err)
		}
	}
	if p.ExpiresAt != "" {
		if _, err := ParseMemoryTime(p.ExpiresAt); err != nil {
			return fmt.Errorf("expires_at: %w", err)
		}
	}
	if p.ReviewedAt != "" {
		if _, err := ParseMemoryTime(p.ReviewedAt); err != nil {
			return fmt.Errorf("reviewed_at: %w", err)
		}
	}
	for _, f := range []struct{ name, v string }{
		{"project", p.Project}, {"agent_profile", p.AgentProfile}, {"workflow_id", p.WorkflowID},
		{"session_id", p.SessionID}, {"operation_id", p.OperationID},
	} {
		if f.v == "" {
			continue
		}
		if err := CheckIdentity(f.name, f.v); err != nil {
			return err
		}
	}
	if err := CheckLabel("event_type", p.EventType, MaxIdentityChars); err != nil {
		return err
	}
	if err := CheckLabel("source.type", p.SourceType, MaxSourceTypeChars); err != nil {
		return err
	}
	if err := CheckMemoryEnums(p.Ring, p.Scope, p.Sensitivity, p.Retention); err != nil {
		return err
	}
	if err := CheckScopeIdentity(p.Scope, p.AgentProfile, p.WorkflowID, p.SessionID); err != nil {
		return err
	}
	if err := CheckUnit("salience", p.Salience); err != nil {
		return err
	}
	if err := CheckUnit("confidence", p.Confidence); err != nil {
		return err
	}
	if len(p.Supersedes) > MaxMemorySupersedes {
		return fmt.Errorf("supersedes has %d entries, limit %d", len(p.Supersedes), MaxMemorySupersedes)
	}
	for _, s := range p.Supersedes {
		if err := ValidMemoryID(s); err != nil {
			return fmt.Errorf("supersedes: %w", err)
		}
	}
	switch p.Origin {
	case OriginRemember, OriginCapture, OriginImport:
	default:
		return fmt.Errorf("invalid origin %q", p.Origin)
	}
	return nil
}

// MemorySuperseded records that a memory was replaced by another. The
// replacement need not exist (an imported row may name one we never saw).
type MemorySuperseded struct {
	MemoryID     string `json:"memory_id"`
	SupersededBy string `json:"superseded_by"`
}

// Check validates both ids.
func (p MemorySuperseded) Check() error {
	if err := ValidMemoryID(p.MemoryID); err != nil {
		return err
	}
	if err := ValidMemoryID(p.SupersededBy); err != nil {
		return fmt.Errorf("superseded_by: %w", err)
	}
	if p.MemoryID == p.SupersededBy {
		return errors.New("a memory cannot supersede itself")
	}
	return nil
}

// MemoryForgotten records a delete or a redaction. The reason is stored as
// a digest and a length only. A redaction names the body that replaced the
// text (the published "[REDACTED]" row).
type MemoryForgotten struct {
	MemoryID       string `json:"memory_id"`
	Mode           string `json:"mode"`
	ReasonSHA256   string `json:"reason_sha256"`
	ReasonChars    int    `json:"reason_chars"`
	RedactedSHA256 string `json:"redacted_body_sha256,omitempty"`
}

// Check validates the mode and digests.
func (p MemoryForgotten) Check() error {
	if err := ValidMemoryID(p.MemoryID); err != nil {
		return err
	}
	if !isHex64(p.ReasonSHA256) || p.ReasonChars < 1 {
		return errors.New("forget needs a reason digest")
	}
	switch p.Mode {
	case ForgetDelete:
		if p.RedactedSHA256 != "" {
			return errors.New("delete carries no redacted body")
		}
	case ForgetRedact:
		if !isHex64(p.RedactedSHA256) {
			return errors.New("redact needs redacted_body_sha256")
		}
	default:
		return fmt.Errorf("invalid forget mode %q", p.Mode)
	}
	return nil
}

// ValidMemoryID checks a memory id: 1..190 bytes of [A-Za-z0-9._:@-], not
// "." or "..", so that memory/<id> is a valid stream and the id is a safe
// identity component in a rendered brief.
func ValidMemoryID(id string) error {
	if id == "" {
		return errors.New("memory id is required")
	}
	if len(id) > 190 {
		return fmt.Errorf("memory id is %d bytes, limit 190", len(id))
	}
	if id == "." || id == ".." {
		return errors.New(`memory id must not be "." or ".."`)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '@' || c == '-') {
			return fmt.Errorf("memory id: byte %d is not one of [A-Za-z0-9._:@-]", i)
		}
	}
	return nil
}

// CheckMemoryEnums checks ring, scope, sensitivity and retention against the
// published enumerations.
func CheckMemoryEnums(ring, scope, sensitivity, retention string) error {
	switch {
	case !slices.Contains(MemoryRings, ring):
		return errors.New("invalid ring")
	case !slices.Contains(MemoryScopes, scope):
		return errors.New("invalid scope")
	case !slices.Contains(MemorySensitivities, sensitivity):
		return errors.New("invalid sensitivity")
	case !slices.Contains(MemoryRetentions, retention):
		return errors.New("invalid retention")
	}
	return nil
}

// CheckScopeIdentity checks that a private scope names its identity.
func CheckScopeIdentity(scope, agent, workflow, session string) error {
	switch {
	case scope == "agent" && agent == "":
		return errors.New("scope agent requires agent_profile")
	case scope == "workflow" && workflow == "":
		return errors.New("scope workflow requires workflow_id")
	case scope == "session" && session == "":
		return errors.New("scope session requires session_id")
	}
	return nil
}

// CheckUnit checks that a score is a finite number in [0, 1].
func CheckUnit(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1 {
		return fmt.Errorf("%s must be a finite number between 0 and 1", name)
	}
	return nil
}

// MemoryTimeLayout is the published timestamp form: RFC 3339, UTC,
// microseconds, suffix Z.
const MemoryTimeLayout = "2006-01-02T15:04:05.000000Z"

// FormatMemoryTime renders t in MemoryTimeLayout.
func FormatMemoryTime(t time.Time) string {
	return t.UTC().Truncate(time.Microsecond).Format(MemoryTimeLayout)
}

// ParseMemoryTime parses an RFC 3339 timestamp (any offset).
func ParseMemoryTime(s string) (time.Time, error) {
	if len(s) > 64 {
		return time.Time{}, errors.New("timestamp too long")
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, errors.New("not an RFC 3339 timestamp")
	}
	return t.UTC(), nil
}

// CheckIdentity is the published rule for identity fields: non-blank, no
// control characters, at most 256 Unicode characters.
func CheckIdentity(name, v string) error {
	if isBlank(v) {
		return fmt.Errorf("%s must not be blank", name)
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("%s must be valid UTF-8", name)
	}
	if utf8.RuneCountInString(v) > MaxIdentityChars {
		return fmt.Errorf("%s must be at most %d characters", name, MaxIdentityChars)
	}
	if HasControl(v) {
		return fmt.Errorf("%s must not contain control characters", name)
	}
	return nil
}

// CheckLabel is CheckIdentity with another character limit.
func CheckLabel(name, v string, limit int) error {
	if isBlank(v) {
		return fmt.Errorf("%s is required", name)
	}
	if !utf8.ValidString(v) || HasControl(v) {
		return fmt.Errorf("%s must not contain control characters", name)
	}
	if utf8.RuneCountInString(v) > limit {
		return fmt.Errorf("%s must be at most %d characters", name, limit)
	}
	return nil
}

// HasControl reports whether s contains a control character (Cc).
func HasControl(s string) bool {
	for _, c := range s {
		if unicode.IsControl(c) {
			return true
		}
	}
	return false
}

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }
