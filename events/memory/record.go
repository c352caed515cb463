package memory

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tree-ring/tree-ring/events"
)

// Record is the published memory model (Rust models.rs and
// schemas/memory-event.schema.json): the shape of `remember --json`, of
// `recall --json` results and of every `memory_event` line of an export.
// Field order is the published one; nulls are nil pointers.
type Record struct {
	ID           string   `json:"id"`
	CreatedAt    string   `json:"created_at"`
	UpdatedAt    string   `json:"updated_at"`
	Project      *string  `json:"project"`
	AgentProfile *string  `json:"agent_profile"`
	WorkflowID   *string  `json:"workflow_id"`
	SessionID    *string  `json:"session_id"`
	OperationID  *string  `json:"operation_id"`
	Scope        string   `json:"scope"`
	Ring         string   `json:"ring"`
	EventType    string   `json:"event_type"`
	Summary      string   `json:"summary"`
	Details      string   `json:"details"`
	Source       Source   `json:"source"`
	Tags         []string `json:"tags"`
	Salience     float64  `json:"salience"`
	Confidence   float64  `json:"confidence"`
	Sensitivity  string   `json:"sensitivity"`
	Retention    string   `json:"retention"`
	ExpiresAt    *string  `json:"expires_at"`
	Supersedes   []string `json:"supersedes"`
	SupersededBy *string  `json:"superseded_by"`
	Links        []Link   `json:"links"`
	Review       Review   `json:"review"`
}

// Source is where a memory came from.
type Source struct {
	Type  string `json:"type"`
	Ref   string `json:"ref"`
	Quote string `json:"quote"`
}

// Link relates a memory to something else.
type Link struct {
	Type   string `json:"type"`
	Target string `json:"target"`
}

// Review is the review state of a memory.
type Review struct {
	NeedsReview  bool    `json:"needs_review"`
	ReviewReason *string `json:"review_reason"`
	ReviewedAt   *string `json:"reviewed_at"`
	ReviewedBy   *string `json:"reviewed_by"`
}

// Body is the text of a memory, stored in the bodies bucket (in the
// form of memory_body.go) and referenced by digest. MemoryID makes every
// body unique to its memory, so deleting one never deletes another's
// identical text; Nonce (random, set by the writer) keeps the digest left
// in the immutable ledger from confirming a guess of the text once the
// body is gone.
type Body struct {
	MemoryID     string
	Nonce        string
	Summary      string
	Details      string
	SourceRef    string
	SourceQuote  string
	Tags         []string
	Links        []Link
	ReviewReason string
	ReviewedBy   string
}

// Memory defaults and limits. The 256-character identity limit is
// published; the text limits are ours (the published core has none) and
// bound what one import line or one body may hold.
const (
	DefaultRing        = "cambium"
	DefaultScope       = "global"
	DefaultSourceType  = "manual"
	DefaultSensitivity = "normal"
	DefaultRetention   = "normal"
	DefaultSalience    = 0.5
	DefaultConfidence  = 0.5
	RedactedSummary    = "[REDACTED]"
	RedactedEventType  = "redacted"

	MaxSummaryBytes    = 64 << 10
	MaxDetailsBytes    = 256 << 10
	MaxQuoteBytes      = 64 << 10
	MaxSourceRefBytes  = 4096
	MaxTags            = 64
	MaxLinks           = 64
	MaxLinkTargetBytes = 4096
	MaxReviewBytes     = 4096
)

// normalizeTime returns s in events.MemoryTimeLayout, or an error naming the field.
func normalizeTime(name, s string) (string, error) {
	t, err := events.ParseMemoryTime(s)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return events.FormatMemoryTime(t), nil
}

// Str returns a pointer to s, or nil for "" (the model's null). It
// allocates only for a non-empty s (&s would move s to the heap on every
// call).
func Str(s string) *string {
	if s == "" {
		return nil
	}
	p := new(string)
	*p = s
	return p
}

// Deref returns *p, or "" for nil.
func Deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// NewRecord returns a record with the published defaults.
func NewRecord(id, summary, eventType string, now time.Time) Record {
	ts := events.FormatMemoryTime(now)
	return Record{
		ID: id, CreatedAt: ts, UpdatedAt: ts, Scope: DefaultScope, Ring: DefaultRing,
		EventType: eventType, Summary: summary, Source: Source{Type: DefaultSourceType},
		Tags: []string{}, Salience: DefaultSalience, Confidence: DefaultConfidence,
		Sensitivity: DefaultSensitivity, Retention: DefaultRetention,
		Supersedes: []string{}, Links: []Link{},
	}
}

// NewID mints the published id form mem_<YYYYmmdd_HHMMSS>_<12 hex>.
func NewID(now time.Time, random [6]byte) string {
	return "mem_" + now.UTC().Format("20060102_150405") + "_" + hex.EncodeToString(random[:])
}

// Validate applies the published rules and our limits, with the published
// error strings where there are some, and normalizes timestamps. Error
// messages name fields, never values: a value may be private.
func (r *Record) Validate() error {
	if err := events.ValidMemoryID(r.ID); err != nil {
		return err
	}
	for _, check := range []func() error{r.validateTimes, r.validateIdentity, r.validateClass, r.validateText, r.validateLists, r.validateSupersession} {
		if err := check(); err != nil {
			return err
		}
	}
	r.Salience += 0 // -0 becomes +0, so equal scores order the same
	r.Confidence += 0
	if r.Tags == nil {
		r.Tags = []string{}
	}
	if r.Supersedes == nil {
		r.Supersedes = []string{}
	}
	if r.Links == nil {
		r.Links = []Link{}
	}
	return nil
}

// validateTimes checks and normalizes the timestamps.
func (r *Record) validateTimes() error {
	var err error
	if r.CreatedAt, err = normalizeTime("created_at", r.CreatedAt); err != nil {
		return err
	}
	if r.UpdatedAt, err = normalizeTime("updated_at", r.UpdatedAt); err != nil {
		return err
	}
	for _, t := range []struct {
		name string
		v    **string
	}{{"expires_at", &r.ExpiresAt}, {"review.reviewed_at", &r.Review.ReviewedAt}} {
		if *t.v == nil {
			continue
		}
		v, err := normalizeTime(t.name, **t.v)
		if err != nil {
			return err
		}
		*t.v = &v
	}
	return nil
}

// validateIdentity checks the identity fields and the scope they serve.
func (r *Record) validateIdentity() error {
	for _, f := range []struct {
		name string
		v    *string
	}{
		{"project", r.Project}, {"agent_profile", r.AgentProfile}, {"workflow_id", r.WorkflowID},
		{"session_id", r.SessionID}, {"operation_id", r.OperationID}, {"review.reviewed_by", r.Review.ReviewedBy},
	} {
		if f.v == nil {
			continue
		}
		if err := events.CheckIdentity(f.name, *f.v); err != nil {
			return err
		}
	}
	return nil
}

// validateClass checks the summary's presence and form, the labels, the
// enums, the scope's identity and the scores.
func (r *Record) validateClass() error {
	if isBlank(r.Summary) {
		return errors.New("summary is required")
	}
	if err := checkSummary(r.Summary); err != nil {
		return err
	}
	if isBlank(r.EventType) {
		return errors.New("event_type is required")
	}
	if err := events.CheckLabel("event_type", r.EventType, events.MaxIdentityChars); err != nil {
		return err
	}
	if err := events.CheckLabel("source.type", r.Source.Type, events.MaxSourceTypeChars); err != nil {
		return err
	}
	if err := events.CheckMemoryEnums(r.Ring, r.Scope, r.Sensitivity, r.Retention); err != nil {
		return err
	}
	if err := events.CheckScopeIdentity(r.Scope, Deref(r.AgentProfile), Deref(r.WorkflowID), Deref(r.SessionID)); err != nil {
		return err
	}
	if err := events.CheckUnit("salience", r.Salience); err != nil {
		return err
	}
	return events.CheckUnit("confidence", r.Confidence)
}

// validateText bounds the free-text fields and the source ref.
func (r *Record) validateText() error {
	for _, t := range []struct {
		name  string
		v     string
		limit int
	}{
		{"summary", r.Summary, MaxSummaryBytes}, {"details", r.Details, MaxDetailsBytes},
		{"source.quote", r.Source.Quote, MaxQuoteBytes}, {"review.review_reason", Deref(r.Review.ReviewReason), MaxReviewBytes},
	} {
		if err := checkText(t.name, t.v, t.limit); err != nil {
			return err
		}
	}
	return checkLine("source.ref", r.Source.Ref, MaxSourceRefBytes)
}

// validateLists checks tags and links.
func (r *Record) validateLists() error {
	if len(r.Tags) > MaxTags {
		return fmt.Errorf("tags has %d entries, limit %d", len(r.Tags), MaxTags)
	}
	for _, t := range r.Tags {
		if isBlank(t) {
			return errors.New("tags must not be blank")
		}
		if err := events.CheckIdentity("tags", t); err != nil {
			return err
		}
	}
	if len(r.Links) > MaxLinks {
		return fmt.Errorf("links has %d entries, limit %d", len(r.Links), MaxLinks)
	}
	for _, l := range r.Links {
		if err := events.CheckLabel("links.type", l.Type, events.MaxSourceTypeChars); err != nil {
			return err
		}
		if err := checkLine("links.target", l.Target, MaxLinkTargetBytes); err != nil {
			return err
		}
	}
	return nil
}

// validateSupersession checks supersedes and superseded_by.
func (r *Record) validateSupersession() error {
	if len(r.Supersedes) > events.MaxMemorySupersedes {
		return fmt.Errorf("supersedes has %d entries, limit %d", len(r.Supersedes), events.MaxMemorySupersedes)
	}
	for _, s := range r.Supersedes {
		if err := events.ValidMemoryID(s); err != nil {
			return fmt.Errorf("supersedes: %w", err)
		}
		if s == r.ID {
			return errors.New("a memory cannot supersede itself")
		}
	}
	if r.SupersededBy != nil {
		if err := events.ValidMemoryID(*r.SupersededBy); err != nil {
			return fmt.Errorf("superseded_by: %w", err)
		}
		if *r.SupersededBy == r.ID {
			return errors.New("a memory cannot supersede itself")
		}
	}
	return nil
}

// checkLine bounds a single-line field that may be empty.
func checkLine(name, v string, limit int) error {
	if len(v) > limit {
		return fmt.Errorf("%s must be at most %d bytes", name, limit)
	}
	if !utf8.ValidString(v) || events.HasControl(v) {
		return fmt.Errorf("%s must not contain control characters", name)
	}
	return nil
}

// checkText bounds free text: tab and line breaks are allowed, other control
// characters (terminal escapes, NUL) are not.
func checkText(name, v string, limit int) error {
	if len(v) > limit {
		return fmt.Errorf("%s must be at most %d bytes", name, limit)
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("%s must be valid UTF-8", name)
	}
	for _, c := range v {
		if unicode.IsControl(c) && c != '\t' && c != '\n' && c != '\r' {
			return fmt.Errorf("%s must not contain control characters", name)
		}
	}
	return nil
}

// checkSummary refuses what would let a summary break out of its line in
// a brief or a recall listing: every C0 and C1 control (tab and line
// breaks included) and the Unicode line and paragraph separators. A
// summary is one line; details hold free text.
func checkSummary(v string) error {
	for _, c := range v {
		if breaksLine(c) {
			return errors.New("summary must be one line: no line breaks, tabs or other control characters")
		}
	}
	return nil
}

// OneLine renders s for a one-line listing: control characters and line
// separators become visible escapes (\n, \t, \r, \u001b), so a summary
// stored before summaries were checked (an old ledger) cannot print a line
// of its own.
func OneLine(s string) string {
	if !strings.ContainsFunc(s, breaksLine) {
		return s
	}
	var b strings.Builder
	for _, c := range s {
		switch {
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case breaksLine(c):
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

func breaksLine(c rune) bool { return unicode.IsControl(c) || c == '\u2028' || c == '\u2029' }

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// Split separates a validated record into the event payload and the body
// text. The body digest is filled in; nonce must be random in production.
func (r *Record) Split(origin, nonce string) (events.MemoryCaptured, []byte) {
	body := Body{
		MemoryID: r.ID, Nonce: nonce, Summary: r.Summary, Details: r.Details,
		SourceRef: r.Source.Ref, SourceQuote: r.Source.Quote, Tags: nonNil(r.Tags), Links: nonNilLinks(r.Links),
		ReviewReason: Deref(r.Review.ReviewReason), ReviewedBy: Deref(r.Review.ReviewedBy),
	}
	raw := MarshalBody(&body)
	sum := sha256.Sum256(raw)
	p := events.MemoryCaptured{
		MemoryID: r.ID, BodySHA256: hex.EncodeToString(sum[:]), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		Project: Deref(r.Project), AgentProfile: Deref(r.AgentProfile), WorkflowID: Deref(r.WorkflowID),
		SessionID: Deref(r.SessionID), OperationID: Deref(r.OperationID),
		Scope: r.Scope, Ring: r.Ring, EventType: r.EventType, SourceType: r.Source.Type,
		Salience: r.Salience, Confidence: r.Confidence, Sensitivity: r.Sensitivity, Retention: r.Retention,
		ExpiresAt: Deref(r.ExpiresAt), NeedsReview: r.Review.NeedsReview, ReviewedAt: Deref(r.Review.ReviewedAt),
		Origin: origin,
	}
	if len(r.Supersedes) > 0 {
		p.Supersedes = append([]string(nil), r.Supersedes...)
	}
	return p, raw
}

// Join rebuilds the published record from a payload (as folded, with
// its current state) and its body.
func Join(p *events.MemoryCaptured, supersededBy string, b *Body) Record {
	r := Record{
		ID: p.MemoryID, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
		Project: Str(p.Project), AgentProfile: Str(p.AgentProfile), WorkflowID: Str(p.WorkflowID),
		SessionID: Str(p.SessionID), OperationID: Str(p.OperationID),
		Scope: p.Scope, Ring: p.Ring, EventType: p.EventType,
		Summary: b.Summary, Details: b.Details,
		Source: Source{Type: p.SourceType, Ref: b.SourceRef, Quote: b.SourceQuote},
		Tags:   nonNil(b.Tags), Salience: p.Salience, Confidence: p.Confidence,
		Sensitivity: p.Sensitivity, Retention: p.Retention, ExpiresAt: Str(p.ExpiresAt),
		Supersedes: nonNil(p.Supersedes), SupersededBy: Str(supersededBy), Links: nonNilLinks(b.Links),
		Review: Review{NeedsReview: p.NeedsReview, ReviewReason: Str(b.ReviewReason),
			ReviewedAt: Str(p.ReviewedAt), ReviewedBy: Str(b.ReviewedBy)},
	}
	return r
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilLinks(s []Link) []Link {
	if s == nil {
		return []Link{}
	}
	return s
}

// SameWriteIntent reports whether two records carry the same write intent,
// per the published idempotency rule: equal project, agent_profile,
// workflow_id, session_id, operation_id, scope, ring, event_type, summary,
// details, source, tags, salience, confidence, sensitivity, retention,
// expires_at, supersedes and links. Ids and timestamps do not count.
func SameWriteIntent(a, b *Record) bool {
	eq := func(x, y *string) bool { return Deref(x) == Deref(y) && (x == nil) == (y == nil) }
	return eq(a.Project, b.Project) && eq(a.AgentProfile, b.AgentProfile) && eq(a.WorkflowID, b.WorkflowID) &&
		eq(a.SessionID, b.SessionID) && eq(a.OperationID, b.OperationID) &&
		a.Scope == b.Scope && a.Ring == b.Ring && a.EventType == b.EventType &&
		a.Summary == b.Summary && a.Details == b.Details && a.Source == b.Source &&
		slices.Equal(a.Tags, b.Tags) && a.Salience == b.Salience && a.Confidence == b.Confidence &&
		a.Sensitivity == b.Sensitivity && a.Retention == b.Retention && eq(a.ExpiresAt, b.ExpiresAt) &&
		slices.Equal(a.Supersedes, b.Supersedes) && slices.Equal(a.Links, b.Links)
}

// OperationClaim is the published idempotency key of an operation id in its
// (project, workflow_id, agent_profile) namespace:
// sha256("tree-ring-operation-namespace-v1" ‖ for each of project,
// workflow_id, agent_profile, operation_id: 0x01 ‖ u64be(len) ‖ bytes, or
// 0x00 when null). session_id is deliberately not part of it.
func OperationClaim(project, workflow, agent, operation string) [32]byte {
	h := sha256.New()
	h.Write([]byte("tree-ring-operation-namespace-v1"))
	var buf [9]byte
	for _, v := range []string{project, workflow, agent, operation} {
		if v == "" {
			h.Write([]byte{0})
			continue
		}
		buf[0] = 1
		binary.BigEndian.PutUint64(buf[1:], uint64(len(v)))
		h.Write(buf[:])
		h.Write([]byte(v))
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// legacyReviewReason is appended to the review of a legacy private-scope row
// whose identity was synthesized.
const legacyReviewReason = "legacy private-scope identity synthesized during portability normalization"

// NormalizeLegacy applies the published portability rule to a pre-0.12
// agent, workflow or session row with a missing or blank identity: it gets
// legacy-{scope}-{32 hex} and a review flag. It reports whether it changed r.
func (r *Record) NormalizeLegacy() bool {
	var field **string
	switch r.Scope {
	case "agent":
		field = &r.AgentProfile
	case "workflow":
		field = &r.WorkflowID
	case "session":
		field = &r.SessionID
	default:
		return false
	}
	if *field != nil && !isBlank(**field) {
		return false
	}
	h := sha256.New()
	h.Write([]byte("tree-ring-memory/legacy-private-scope-identity/v1"))
	h.Write([]byte{0})
	h.Write([]byte(r.Scope))
	h.Write([]byte{0})
	h.Write([]byte(r.ID))
	v := "legacy-" + r.Scope + "-" + hex.EncodeToString(h.Sum(nil)[:16])
	*field = &v
	r.Review.NeedsReview = true
	reason := legacyReviewReason
	if r.Review.ReviewReason != nil && *r.Review.ReviewReason != "" {
		reason = *r.Review.ReviewReason + "; " + legacyReviewReason
	}
	r.Review.ReviewReason = &reason
	return true
}

// RedactPayload applies the published redaction rule to a payload: the
// identities and supersession are cleared, a private scope becomes manual,
// event_type becomes "redacted", the source and review are reset and the
// sensitivity becomes private. The caller stores RedactedBody as the text.
func RedactPayload(p events.MemoryCaptured, bodySHA256, at string) events.MemoryCaptured {
	p.BodySHA256 = bodySHA256
	p.Project, p.AgentProfile, p.WorkflowID, p.SessionID, p.OperationID = "", "", "", "", ""
	switch p.Scope {
	case "agent", "workflow", "session":
		p.Scope = "manual"
	}
	p.EventType = RedactedEventType
	p.SourceType = DefaultSourceType
	p.NeedsReview, p.ReviewedAt = false, ""
	p.Sensitivity = "private"
	p.Supersedes = nil
	p.UpdatedAt = at
	p.Redacted = true
	return p
}

// RedactedBody is the text that replaces a redacted memory's text.
func RedactedBody(id string) []byte {
	return MarshalBody(&Body{MemoryID: id, Summary: RedactedSummary})
}

// IsRedactedRow reports whether an imported row is already a redaction
// tombstone (the published migration tombstones every '[REDACTED]' row).
func (r *Record) IsRedactedRow() bool { return r.Summary == RedactedSummary }
