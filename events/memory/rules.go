package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tree-ring/tree-ring/events"
)

// The write rules of remember, capture, import and forget. Each is a pure
// function of its request and of what the ledger holds (an Index the
// command layer adapts from the recall index inside its transaction); it
// returns what to write, and the command stores the bodies, appends the
// events and prints.

// RefusedError is a write a memory rule refuses. Reason is public and
// path-free (it names flags, rules and memory ids, never a value that may
// be private); Code is its diagnostic code.
type RefusedError struct{ Code, Reason string }

func (e *RefusedError) Error() string { return e.Reason }

// Diagnostic is the error's diagnostic code ([a-z][a-z0-9_-]*).
func (e *RefusedError) Diagnostic() string { return e.Code }

func refused(code, format string, a ...any) error {
	return &RefusedError{Code: code, Reason: fmt.Sprintf(format, a...)}
}

// OperationConflictError is the published idempotency refusal: the
// operation id is already bound to a memory with another write intent.
type OperationConflictError struct{ OperationID string }

func (e *OperationConflictError) Error() string {
	return fmt.Sprintf("operation_id %s is already bound to a different memory write", e.OperationID)
}

// Diagnostic is the error's diagnostic code.
func (e *OperationConflictError) Diagnostic() string { return "operation_conflict" }

// Index is what the write rules read of the ledger. Implementations are
// read within one transaction and need not be safe for concurrent use.
type Index interface {
	// Exists reports whether memory id has a stream (a deleted memory's
	// still does).
	Exists(id string) bool
	// Claimed returns the memory that holds an operation claim.
	Claimed(claim [32]byte) (id string, ok bool)
	// Lookup returns memory id as recalled; found is false when it was
	// never captured or was deleted, redacted true for a tombstone.
	Lookup(id string) (rec Record, redacted, found bool, err error)
	// SameSummary returns the live memories (not superseded, redacted or
	// deleted) indexed under a DuplicateKey, oldest first. It may also
	// return memories of another key that shares the index's prefix of it:
	// Duplicate compares what the key stands for.
	SameSummary(key [32]byte) ([]string, error)
}

// Prepare applies the sensitivity guard first (so that no error message or
// write can carry a secret), then the model's validation.
func Prepare(rec *Record) error {
	if err := rec.InspectSensitivity(); err != nil {
		return err
	}
	return rec.Validate()
}

// RememberRequest is what `remember` was asked: the summary and the flags,
// identity defaults from the environment already applied ("" is absent).
type RememberRequest struct {
	Summary, EventType, Ring, Scope                           string
	Project, AgentProfile, WorkflowID, SessionID, OperationID string
	SourceRef, ExpiresAt                                      string
	Tags, Supersedes                                          []string
	Salience, Confidence                                      float64
}

// Remember returns the prepared record `remember` writes: a new id from
// now and random, the published defaults, then the request.
func Remember(req RememberRequest, now time.Time, random [6]byte) (Record, error) {
	rec := NewRecord(NewID(now, random), req.Summary, req.EventType, now)
	rec.Ring, rec.Scope = req.Ring, req.Scope
	rec.Project, rec.AgentProfile = Str(req.Project), Str(req.AgentProfile)
	rec.WorkflowID, rec.SessionID, rec.OperationID = Str(req.WorkflowID), Str(req.SessionID), Str(req.OperationID)
	if req.SourceRef != "" {
		rec.Source = Source{Type: "agent", Ref: req.SourceRef}
	}
	rec.Tags = append([]string{}, req.Tags...)
	rec.Salience, rec.Confidence = req.Salience, req.Confidence
	rec.ExpiresAt = Str(req.ExpiresAt)
	rec.Supersedes = slices.Compact(append([]string{}, req.Supersedes...))
	if err := Prepare(&rec); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// The strict automatic path, as published (0.15.5+): what a lifecycle
// capture checkpoint asks the agent to run, zero to three times.
var (
	captureRings      = []string{"cambium", "scar", "seed"}
	captureEventTypes = []string{"preference", "decision", "lesson", "warning", "correction", "seed"}
)

const (
	// CaptureTag is added to every automatic capture.
	CaptureTag           = "automatic-capture"
	checkpointRefPrefix  = "agent-checkpoint:"
	maxCaptureSummary    = 2000 // bytes; a checkpoint records concise candidates, never a transcript
	maxCheckpointIDBytes = 128
)

// CaptureRequest is what `capture` was asked. Every identity field is
// required (the command checks presence as a usage rule).
type CaptureRequest struct {
	Summary, EventType, Ring                                             string
	Project, AgentProfile, WorkflowID, SessionID, OperationID, SourceRef string
	Tags                                                                 []string
}

// Capture returns the prepared record of one strict automatic capture:
// agent scope, the capture tag, and only what the published strict path
// accepts. The sensitivity guard runs before the capture rules, so that
// neither a write nor an error can carry secret-like content.
func Capture(req CaptureRequest, now time.Time, random [6]byte) (Record, error) {
	rec := NewRecord(NewID(now, random), req.Summary, req.EventType, now)
	rec.Ring, rec.Scope = req.Ring, "agent"
	rec.Project, rec.AgentProfile = Str(req.Project), Str(req.AgentProfile)
	rec.WorkflowID, rec.SessionID, rec.OperationID = Str(req.WorkflowID), Str(req.SessionID), Str(req.OperationID)
	rec.Source = Source{Type: "agent", Ref: req.SourceRef}
	rec.Tags = append([]string{}, req.Tags...)
	if !slices.Contains(rec.Tags, CaptureTag) {
		rec.Tags = append(rec.Tags, CaptureTag)
	}
	if err := rec.InspectSensitivity(); err != nil {
		return Record{}, err
	}
	if err := checkCapture(&rec); err != nil {
		return Record{}, err
	}
	if err := Prepare(&rec); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// The placeholders of a stop checkpoint's printed capture lines
// (adapters/preflight.CheckpointReason): plain words, inert in any shell and
// under XML escaping. A line run before they were replaced is refused,
// naming each one left.
const (
	SummaryPlaceholder   = "SUMMARY"
	EventTypePlaceholder = "TYPE"
	RingPlaceholder      = "RING"
)

// checkCapture applies the strict automatic capture rules.
func checkCapture(rec *Record) error {
	const code = "capture_refused"
	if left := unreplacedPlaceholders(rec); left != "" {
		return refused(code, "automatic capture: replace the placeholder %s of the checkpoint line first "+
			"(SUMMARY: the candidate in double quotes; TYPE: preference, decision, lesson, warning, correction or seed; RING: cambium, scar or seed)", left)
	}
	if rec.Sensitivity != SensitivityNormal {
		return refused(code, "automatic capture accepts only normal sensitivity")
	}
	if !slices.Contains(captureRings, rec.Ring) {
		return refused(code, "automatic capture accepts only the cambium, scar or seed ring")
	}
	if !slices.Contains(captureEventTypes, rec.EventType) {
		return refused(code, "automatic capture accepts only event types preference, decision, lesson, warning, correction or seed")
	}
	if len(rec.Summary) > maxCaptureSummary || events.HasControl(rec.Summary) {
		return refused(code, "automatic capture takes one concise line (at most 2000 bytes, no control characters), never a transcript")
	}
	cp, ok := strings.CutPrefix(rec.Source.Ref, checkpointRefPrefix)
	if !ok || cp == "" || len(cp) > maxCheckpointIDBytes || strings.ContainsFunc(cp, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) {
		return refused(code, "automatic capture needs --source-ref agent-checkpoint:<checkpoint id>")
	}
	op := Deref(rec.OperationID)
	if op != "auto-"+cp+"-1" && op != "auto-"+cp+"-2" && op != "auto-"+cp+"-3" {
		return refused(code, "automatic capture needs --operation-id auto-<checkpoint id>-<1|2|3> of the same checkpoint (at most three candidates)")
	}
	return nil
}

// unreplacedPlaceholders lists the placeholders rec still holds, comma
// separated, or "".
func unreplacedPlaceholders(rec *Record) string {
	var left []string
	for _, p := range []struct{ v, placeholder string }{
		{rec.Summary, SummaryPlaceholder}, {rec.EventType, EventTypePlaceholder}, {rec.Ring, RingPlaceholder},
	} {
		if strings.TrimSpace(p.v) == p.placeholder {
			left = append(left, p.placeholder)
		}
	}
	return strings.Join(left, ", ")
}

// claimOf returns rec's operation claim; ok is false without an
// operation_id.
func claimOf(rec *Record) (claim [32]byte, ok bool) {
	if rec.OperationID == nil {
		return claim, false
	}
	return OperationClaim(Deref(rec.Project), Deref(rec.WorkflowID), Deref(rec.AgentProfile), *rec.OperationID), true
}

// Retry applies operation_id idempotency against the ledger: ok is true
// when the claim is held by a memory with the same write intent (an exact
// retry: nothing is written, existing is what to print); a different
// intent is *OperationConflictError.
func Retry(idx Index, rec *Record) (existing Record, ok bool, err error) {
	claim, has := claimOf(rec)
	if !has {
		return Record{}, false, nil
	}
	id, held := idx.Claimed(claim)
	if !held {
		return Record{}, false, nil
	}
	existing, _, found, err := idx.Lookup(id)
	if err != nil {
		return Record{}, false, err
	}
	if found && SameWriteIntent(&existing, rec) {
		return existing, true, nil
	}
	return Record{}, false, &OperationConflictError{OperationID: *rec.OperationID}
}

// Write is what storing one memory writes: its body and memory.captured,
// and memory.superseded when the record itself says it was superseded (as
// an imported row may).
type Write struct {
	// Body is the body to store; Captured.BodySHA256 is its digest.
	Body         []byte
	Captured     events.MemoryCaptured
	SupersededBy *events.MemorySuperseded
}

// NewWrite splits a prepared record into what to store, recording origin.
// nonce salts the body so that the digest left in the ledger after a
// delete cannot confirm a guess of the text; it is not called for a
// redaction tombstone, whose text is public.
func NewWrite(rec *Record, origin string, nonce func() string) Write {
	salt := ""
	if !rec.IsRedactedRow() {
		salt = nonce()
	}
	p, body := rec.Split(origin, salt)
	p.Redacted = rec.IsRedactedRow()
	w := Write{Body: body, Captured: p}
	if rec.SupersededBy != nil && !p.Redacted {
		w.SupersededBy = &events.MemorySuperseded{MemoryID: rec.ID, SupersededBy: *rec.SupersededBy}
	}
	return w
}

// Plan is what one remember or capture does in its transaction.
type Plan struct {
	// Existing is set for an exact retry or a duplicate: no memory event is
	// written and it is the memory to print.
	Existing *Record
	// Duplicate is true when Existing is an active memory with the same
	// normalized summary in the same scope (not an operation retry).
	Duplicate bool
	Write     Write
	// Supersede marks each memory the record replaces, in order.
	Supersede []events.MemorySuperseded
}

// WriteOptions are the choices of one remember or capture.
type WriteOptions struct {
	Origin string        // events.OriginRemember or events.OriginCapture
	Nonce  func() string // salts the body (see NewWrite)
	Now    time.Time     // decides whether a duplicate candidate has expired
	// AllowDuplicate writes a new memory even when an active one in the
	// same scope has the same normalized summary.
	AllowDuplicate bool
}

// PlanRemember decides a remember or capture of the prepared record rec:
// an exact retry writes nothing; otherwise the id must be new and every
// memory it supersedes must exist and not be a redaction tombstone; then,
// unless o.AllowDuplicate, a duplicate of an active memory (Duplicate)
// writes nothing and returns that memory.
func PlanRemember(idx Index, rec *Record, o WriteOptions) (Plan, error) {
	if existing, ok, err := Retry(idx, rec); err != nil {
		return Plan{}, err
	} else if ok {
		return Plan{Existing: &existing}, nil
	}
	if idx.Exists(rec.ID) {
		return Plan{}, refused("memory_exists", "memory id %s already exists", rec.ID)
	}
	for _, target := range rec.Supersedes {
		_, redacted, found, err := idx.Lookup(target)
		switch {
		case err != nil:
			return Plan{}, err
		case !found || redacted:
			return Plan{}, refused("memory_not_found", "--supersedes: memory %s not found", target)
		}
	}
	if !o.AllowDuplicate {
		if dup, ok, err := Duplicate(idx, rec, o.Now); err != nil {
			return Plan{}, err
		} else if ok {
			return Plan{Existing: &dup, Duplicate: true}, nil
		}
	}
	p := Plan{Write: NewWrite(rec, o.Origin, o.Nonce)}
	for _, target := range rec.Supersedes {
		p.Supersede = append(p.Supersede, events.MemorySuperseded{MemoryID: target, SupersededBy: rec.ID})
	}
	return p, nil
}

// ImportFile checks the structure of an import as its lines arrive: the
// export header, if any, first and once, then memories, each normalized
// (the published legacy rule) and prepared; Records checks the header's
// count. A refused line is recorded (Refused) and the next one read, so
// one pass names every refused line. Not safe for concurrent use.
type ImportFile struct {
	header  *ExportHeader
	recs    []Record
	refused []RefusedLine
}

// maxPresized bounds the records an export header's count reserves.
const maxPresized = 1 << 20

// RefusedLine is a line an import refused: its number, the kind of
// refusal (a diagnostic code) and the error, whose message names fields
// and rules, never a value. Nothing of the line's text is kept.
type RefusedLine struct {
	Line int    `json:"line"`
	Kind string `json:"reason"`
	Err  error  `json:"-"`
}

// Refusal kinds of an import line that are not a write rule's own code.
const (
	RefusedUnreadable      = "unreadable_line" // not a JSON line of the export format
	RefusedInvalidMemory   = "invalid_memory"  // a memory Record.Validate refuses
	RefusedMisplacedHeader = "misplaced_header"
)

// Add decodes line n (non-empty); now is the default created_at. A refusal
// is recorded and returned.
func (f *ImportFile) Add(n int, line []byte, now string) error {
	p := ParseImportLine(line, now)
	return f.Take(n, &p)
}

// ParsedLine is one import line decoded, normalized and prepared
// (ParseImportLine), not yet placed in its file (ImportFile.Take).
type ParsedLine struct {
	header *ExportHeader
	rec    Record
	err    error
}

// ParseImportLine is the part of ImportFile.Add that reads no state of the
// file: strict decoding, the legacy normalization and Prepare (validation
// and the sensitivity check). Lines may be parsed concurrently and taken
// in file order.
func ParseImportLine(line []byte, now string) ParsedLine {
	l, err := DecodeImportLine(line, now)
	switch {
	case err != nil:
		return ParsedLine{err: err}
	case l.Header != nil:
		return ParsedLine{header: l.Header}
	}
	p := ParsedLine{rec: *l.Memory}
	p.rec.NormalizeLegacy()
	if err := Prepare(&p.rec); err != nil {
		p.err = &invalidError{RefusedInvalidMemory, err}
	}
	return p
}

// Take places line n's parse in the file, in file order: the header first
// and once, then memories. A refusal is recorded and returned.
func (f *ImportFile) Take(n int, p *ParsedLine) error {
	err := f.take(p)
	if err != nil {
		f.Refuse(n, RefusedUnreadable, err)
	}
	return err
}

// Refuse records line n as refused for kind, unless err carries its own
// diagnostic code (a policy refusal such as secret_blocked), which wins.
func (f *ImportFile) Refuse(n int, kind string, err error) {
	var d interface{ Diagnostic() string }
	var v *invalidError
	switch {
	case errors.As(err, &d):
		kind = d.Diagnostic()
	case errors.As(err, &v):
		kind = v.kind
		err = v.err
	}
	f.refused = append(f.refused, RefusedLine{Line: n, Kind: kind, Err: err})
}

// invalidError tags an error of add with its refusal kind.
type invalidError struct {
	kind string
	err  error
}

func (e *invalidError) Error() string { return e.err.Error() }
func (e *invalidError) Unwrap() error { return e.err }

func (f *ImportFile) take(p *ParsedLine) error {
	switch {
	case p.err != nil:
		return p.err
	case p.header != nil:
		if f.header != nil || len(f.recs)+len(f.refused) > 0 {
			return &invalidError{RefusedMisplacedHeader, errors.New("the export header must be the first line")}
		}
		f.header = p.header
		// The records of a whole file, in one allocation (a header that
		// lies fails Records).
		f.recs = make([]Record, 0, min(max(p.header.MemoryCount, 0), maxPresized))
		return nil
	}
	f.recs = append(f.recs, p.rec)
	return nil
}

// Refused returns the refused lines in file order.
func (f *ImportFile) Refused() []RefusedLine { return f.refused }

// Records returns the memories read, once the whole file is in. The
// header's count covers refused lines too: the file is whole, some of its
// lines are refused.
func (f *ImportFile) Records() ([]Record, error) {
	if f.header != nil && f.header.MemoryCount != len(f.recs)+len(f.refused) {
		return nil, fmt.Errorf("the header says %d memories, the file has %d", f.header.MemoryCount, len(f.recs)+len(f.refused))
	}
	return f.recs, nil
}

// ImportPlanner decides, record by record, what an import does. The dry
// run (on a read snapshot) and the real import (inside each write
// transaction) share it, so both count the same. Not safe for concurrent
// use.
type ImportPlanner struct {
	ids    map[string]bool // ids inserted by this import
	claims map[[32]byte]*Record
}

// NewImportPlanner returns a planner for one import.
func NewImportPlanner() *ImportPlanner {
	return &ImportPlanner{ids: map[string]bool{}, claims: map[[32]byte]*Record{}}
}

// Decide returns true to insert rec, false to skip it as a duplicate (an
// id already in the ledger or in this import, also a forgotten one: an
// import never resurrects it; or an exact retry of an operation), or
// *OperationConflictError.
func (p *ImportPlanner) Decide(idx Index, rec *Record) (bool, error) {
	if p.ids[rec.ID] || idx.Exists(rec.ID) {
		return false, nil
	}
	if claim, ok := claimOf(rec); ok {
		if prev, seen := p.claims[claim]; seen {
			if SameWriteIntent(prev, rec) {
				return false, nil
			}
			return false, &OperationConflictError{OperationID: *rec.OperationID}
		}
		if _, retry, err := Retry(idx, rec); err != nil || retry {
			return false, err
		}
		p.claims[claim] = rec
	}
	p.ids[rec.ID] = true
	return true, nil
}

// ImportSupersessions returns what an import appends after all its rows,
// as published: each inserted row marks every target of its supersedes
// list that exists (in the ledger, which by then holds the import) and is
// not a redaction tombstone, unless this row already marks it.
func ImportSupersessions(idx Index, inserted []*Record) ([]events.MemorySuperseded, error) {
	var out []events.MemorySuperseded
	marked := map[string]string{} // target -> superseded_by after the events so far
	for _, rec := range inserted {
		for _, target := range rec.Supersedes {
			cur, redacted, found, err := idx.Lookup(target)
			if err != nil {
				return nil, err
			}
			by, ok := marked[target]
			if !ok {
				by = Deref(cur.SupersededBy)
			}
			if !found || redacted || by == rec.ID {
				continue
			}
			out = append(out, events.MemorySuperseded{MemoryID: target, SupersededBy: rec.ID})
			marked[target] = rec.ID
		}
	}
	return out, nil
}

// ForgetTarget is what the ledger holds of a memory to forget.
type ForgetTarget struct {
	Found    bool // recalled: captured and not deleted
	Streamed bool // its stream has events (a deleted memory's still does)
	Redacted bool // a redaction tombstone
}

// Forget is what forgetting one memory writes besides deleting its body:
// the tombstone body to store in redact mode (nil in delete mode) and
// memory.forgotten, which names the tombstone's digest.
type Forget struct {
	RedactedBody []byte
	Event        events.MemoryForgotten
}

// PlanForget decides forgetting memory id in mode (events.ForgetDelete or
// events.ForgetRedact) for reason, which is kept only as a digest and a
// character count.
func PlanForget(id, mode, reason string, t ForgetTarget) (Forget, error) {
	switch {
	case !t.Found && t.Streamed:
		return Forget{}, refused("memory_deleted", "memory %s was already deleted", id)
	case !t.Found:
		return Forget{}, refused("memory_not_found", "memory %s not found", id)
	case t.Redacted && mode == events.ForgetRedact:
		return Forget{}, refused("memory_redacted", "memory %s is already redacted", id)
	}
	sum := sha256.Sum256([]byte(reason))
	f := Forget{Event: events.MemoryForgotten{MemoryID: id, Mode: mode, ReasonSHA256: hex.EncodeToString(sum[:]), ReasonChars: utf8.RuneCountInString(reason)}}
	if mode == events.ForgetRedact {
		f.RedactedBody = RedactedBody(id)
		d := sha256.Sum256(f.RedactedBody)
		f.Event.RedactedSHA256 = hex.EncodeToString(d[:])
	}
	return f, nil
}

// Exported reports whether an export includes a memory: superseded ones
// only with includeSuperseded, and only normal sensitivity unless
// includeSensitive (redaction tombstones are private).
func Exported(rec *Record, superseded, includeSensitive, includeSuperseded bool) bool {
	return (!superseded || includeSuperseded) && (rec.Sensitivity == SensitivityNormal || includeSensitive)
}

// SortForExport orders memories as an export lists them: by created_at,
// then id.
func SortForExport(recs []Record) {
	slices.SortFunc(recs, func(a, b Record) int {
		if c := strings.Compare(a.CreatedAt, b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// NewExportHeader returns the header line of an export of count memories
// written at now by pluginVersion.
func NewExportHeader(pluginVersion string, now time.Time, count int, sensitiveIncluded bool) ExportHeader {
	return ExportHeader{
		Type: ExportHeaderType, SchemaVersion: 1, PluginVersion: pluginVersion,
		CreatedAt: events.FormatMemoryTime(now), MemoryCount: count, SensitiveIncluded: sensitiveIncluded,
	}
}
