package events

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// The run ledger records the lifecycle of every execution command on the
// stream run/<run id>: run.started (version 1) then exactly one terminal
// event, run.finished or run.interrupted (version 2). A run.finished may
// follow a run.interrupted: the run's own process outranks another
// process's guess that it died (see docs/runs.md).
//
// Run payloads carry identifiers, enums, digests, counts and times only.
// Never: prompts, task hints, memory text, error text, tool data,
// environment values, raw session ids or raw paths. Every field is bounded
// and checked on decode, so a tampered or imported record cannot smuggle
// content through a free-text field: there is none.

// Run statuses. running is the state between run.started and a terminal
// event; it is never written in a payload.
const (
	RunStatusRunning     = "running"
	RunStatusSucceeded   = "succeeded"
	RunStatusFailed      = "failed"
	RunStatusAborted     = "aborted"
	RunStatusInterrupted = "interrupted"
)

// RunStatuses lists every status a run record can have.
func RunStatuses() []string {
	return []string{RunStatusRunning, RunStatusSucceeded, RunStatusFailed, RunStatusAborted, RunStatusInterrupted}
}

// ValidRunStatus reports whether s is a run status.
func ValidRunStatus(s string) bool {
	for _, v := range RunStatuses() {
		if s == v {
			return true
		}
	}
	return false
}

// Commands whose runs are recorded. The set is closed: a new execution
// command adds its name here (one line), so a command name can never carry
// input.
const (
	RunCmdInit                   = "init"
	RunCmdIntegrationsActivate   = "integrations activate"
	RunCmdIntegrationsLink       = "integrations link"
	RunCmdIntegrationsDeactivate = "integrations deactivate"
	RunCmdIntegrationsReconcile  = "integrations reconcile"
	RunCmdIntegrationsPreflight  = "integrations preflight"
	RunCmdIntegrationsHook       = "integrations hook"
	RunCmdIntegrationsCertify    = "integrations certify"
	RunCmdCapture                = "capture"
	RunCmdImport                 = "import"
	RunCmdEventsImport           = "events import"
	RunCmdProjectionsRebuild     = "projections rebuild"
)

var runCommands = map[string]bool{
	RunCmdInit: true, RunCmdIntegrationsActivate: true, RunCmdIntegrationsLink: true,
	RunCmdIntegrationsDeactivate: true, RunCmdIntegrationsReconcile: true, RunCmdIntegrationsPreflight: true,
	RunCmdIntegrationsHook: true, RunCmdIntegrationsCertify: true, RunCmdCapture: true,
	RunCmdImport: true, RunCmdEventsImport: true, RunCmdProjectionsRebuild: true,
}

// ValidRunCommand reports whether c is a recorded command name.
func ValidRunCommand(c string) bool { return runCommands[c] }

// Query classes of a preflight recall (the protocol's approved categories).
const (
	QueryClassTaskHint        = "task_hint"
	QueryClassStartupFallback = "startup_fallback"
)

// Bounds of run payloads.
const (
	RunScopeKeyLen     = 24
	MaxRunStageLen     = 32
	MaxRunDiagLen      = 48
	MaxRunHarnessLen   = 32
	MaxRunReceiptIDLen = 80
	MaxRunResultCount  = 1000
	MaxRunItems        = 1 << 48
	MaxRunInputChars   = 1 << 40
	MaxRunPID          = 1<<31 - 1
	MaxRunDurationMS   = 366 * 24 * 3600 * 1000
	// RunTimeLayout is the layout of every run time: UTC, milliseconds.
	RunTimeLayout = "2006-01-02T15:04:05.000Z"
)

// RunStarted opens a run record.
type RunStarted struct {
	RunID    string `json:"run_id"`
	ScopeKey string `json:"scope_key"`
	Command  string `json:"command"`
	// Harness is set for hook and preflight runs.
	Harness   string `json:"harness,omitempty"`
	Stage     string `json:"stage"`
	PID       int    `json:"pid"`
	StartedAt string `json:"started_at"`
	// InputSHA256 and InputChars describe the command's input (stdin, an
	// import file) when it is known before the work starts.
	InputSHA256 string `json:"input_sha256,omitempty"`
	InputChars  int64  `json:"input_chars,omitempty"`
}

// RunFinished closes a run with a terminal outcome.
type RunFinished struct {
	RunID      string `json:"run_id"`
	ScopeKey   string `json:"scope_key"`
	Status     string `json:"status"`
	Stage      string `json:"stage"`
	EndedAt    string `json:"ended_at"`
	DurationMS int64  `json:"duration_ms"`
	// Diagnostic is a code (see docs/runs.md), set exactly when failed.
	Diagnostic  string        `json:"diagnostic,omitempty"`
	InputSHA256 string        `json:"input_sha256,omitempty"`
	InputChars  int64         `json:"input_chars,omitempty"`
	Telemetry   *RunTelemetry `json:"telemetry,omitempty"`
}

// RunTelemetry is bounded numeric and enumerated telemetry of a run.
type RunTelemetry struct {
	// QueryClass and ResultCount describe a preflight recall; ResultCount
	// is a pointer so that zero results read as 0, not as absent.
	QueryClass  string `json:"query_class,omitempty"`
	ResultCount *int   `json:"result_count,omitempty"`
	ReceiptID   string `json:"receipt_id,omitempty"`
	// Items counts what the command processed: events folded by a rebuild,
	// envelopes imported, files published.
	Items *int64 `json:"items,omitempty"`
}

// RunInterrupted records that a run's process died without finishing, as
// found by a later process in the same scope.
type RunInterrupted struct {
	RunID         string `json:"run_id"`
	ScopeKey      string `json:"scope_key"`
	PID           int    `json:"pid"`
	DetectedAt    string `json:"detected_at"`
	DetectedByPID int    `json:"detected_by_pid"`
}

// Check validates bounds and enums.
func (p RunStarted) Check() error {
	if err := checkRunIDs(p.RunID, p.ScopeKey); err != nil {
		return err
	}
	if !ValidRunCommand(p.Command) {
		return fmt.Errorf("command %q is not a recorded command", truncate(p.Command))
	}
	if p.Harness != "" {
		if err := ValidHarnessID(p.Harness); err != nil {
			return err
		}
	}
	if err := ValidRunStage(p.Stage); err != nil {
		return err
	}
	if err := checkPID("pid", p.PID); err != nil {
		return err
	}
	if err := checkRunTime("started_at", p.StartedAt); err != nil {
		return err
	}
	return CheckRunInput(p.InputSHA256, p.InputChars)
}

// Check validates bounds and enums.
func (p RunFinished) Check() error {
	if err := checkRunIDs(p.RunID, p.ScopeKey); err != nil {
		return err
	}
	switch p.Status {
	case RunStatusSucceeded, RunStatusAborted:
		if p.Diagnostic != "" {
			return fmt.Errorf("diagnostic is only allowed when status is %s", RunStatusFailed)
		}
	case RunStatusFailed:
		if err := ValidDiagnostic(p.Diagnostic); err != nil {
			return err
		}
	default:
		return fmt.Errorf("status %q: want %s, %s or %s", truncate(p.Status), RunStatusSucceeded, RunStatusFailed, RunStatusAborted)
	}
	if err := ValidRunStage(p.Stage); err != nil {
		return err
	}
	if err := checkRunTime("ended_at", p.EndedAt); err != nil {
		return err
	}
	if p.DurationMS < 0 || p.DurationMS > MaxRunDurationMS {
		return fmt.Errorf("duration_ms %d out of range 0..%d", p.DurationMS, int64(MaxRunDurationMS))
	}
	if err := CheckRunInput(p.InputSHA256, p.InputChars); err != nil {
		return err
	}
	if p.Telemetry != nil {
		return p.Telemetry.Check()
	}
	return nil
}

// Check validates bounds and enums.
func (t RunTelemetry) Check() error {
	switch t.QueryClass {
	case "", QueryClassTaskHint, QueryClassStartupFallback:
	default:
		return fmt.Errorf("telemetry.query_class %q: want %s or %s", truncate(t.QueryClass), QueryClassTaskHint, QueryClassStartupFallback)
	}
	if t.ResultCount != nil && (*t.ResultCount < 0 || *t.ResultCount > MaxRunResultCount) {
		return fmt.Errorf("telemetry.result_count %d out of range 0..%d", *t.ResultCount, MaxRunResultCount)
	}
	if (t.QueryClass == "") != (t.ResultCount == nil) {
		return errors.New("telemetry.query_class and telemetry.result_count go together")
	}
	if t.ReceiptID != "" {
		if err := checkToken("telemetry.receipt_id", t.ReceiptID, MaxRunReceiptIDLen); err != nil {
			return err
		}
	}
	if t.Items != nil && (*t.Items < 0 || *t.Items > MaxRunItems) {
		return fmt.Errorf("telemetry.items %d out of range 0..%d", *t.Items, int64(MaxRunItems))
	}
	return nil
}

// Check validates bounds.
func (p RunInterrupted) Check() error {
	if err := checkRunIDs(p.RunID, p.ScopeKey); err != nil {
		return err
	}
	if err := checkPID("pid", p.PID); err != nil {
		return err
	}
	if err := checkPID("detected_by_pid", p.DetectedByPID); err != nil {
		return err
	}
	return checkRunTime("detected_at", p.DetectedAt)
}

// ValidScopeKey checks a run scope key: 24 lowercase hex characters.
func ValidScopeKey(s string) error {
	if len(s) != RunScopeKeyLen || !isLowerHex(s) {
		return fmt.Errorf("scope_key is not %d lowercase hex characters", RunScopeKeyLen)
	}
	return nil
}

// ValidRunStage checks a stage name: [a-z][a-z0-9_-]*, at most
// MaxRunStageLen bytes.
func ValidRunStage(s string) error {
	if !isCode(s, MaxRunStageLen) {
		return fmt.Errorf("stage %q: want [a-z][a-z0-9_-]*, at most %d bytes", truncate(s), MaxRunStageLen)
	}
	return nil
}

// ValidDiagnostic checks a diagnostic code: [a-z][a-z0-9_-]*, at most
// MaxRunDiagLen bytes. It is a code chosen by the program, never error text.
func ValidDiagnostic(s string) error {
	if !isCode(s, MaxRunDiagLen) {
		return fmt.Errorf("diagnostic %q: want [a-z][a-z0-9_-]*, at most %d bytes", truncate(s), MaxRunDiagLen)
	}
	return nil
}

// ValidHarnessID checks a harness id: [a-z][a-z0-9_-]*, at most
// MaxRunHarnessLen bytes (the adapter registry decides which exist).
func ValidHarnessID(s string) error {
	if !isCode(s, MaxRunHarnessLen) {
		return fmt.Errorf("harness %q: want [a-z][a-z0-9_-]*, at most %d bytes", truncate(s), MaxRunHarnessLen)
	}
	return nil
}

// FormatRunTime renders t in RunTimeLayout.
func FormatRunTime(t time.Time) string { return t.UTC().Format(RunTimeLayout) }

// ParseRunTime parses a time in RunTimeLayout.
func ParseRunTime(s string) (time.Time, error) {
	// The layout is fixed: parsed by hand (an import checks one per run
	// event; time.Parse and the Format round trip cost more than the rest
	// of its payload's check). What this accepts, the general path accepts
	// identically (FuzzParseRunTime); the rest goes through it.
	if len(s) == len(RunTimeLayout) && s[19] == '.' && s[23] == 'Z' {
		if t, ok := parseCanonicalUTC([]byte(s)); ok {
			return t, nil
		}
	}
	t, err := time.Parse(RunTimeLayout, s)
	if err != nil || t.Format(RunTimeLayout) != s {
		return time.Time{}, fmt.Errorf("time %q is not in the layout %s", truncate(s), RunTimeLayout)
	}
	return t, nil
}

func checkRunIDs(runID, scope string) error {
	if len(runID) != ulid.EncodedSize {
		return fmt.Errorf("run_id %q is not a ULID", truncate(runID))
	}
	if _, err := ulid.ParseStrict(runID); err != nil || strings.ToUpper(runID) != runID {
		return fmt.Errorf("run_id %q is not a canonical ULID", truncate(runID))
	}
	return ValidScopeKey(scope)
}

func checkPID(name string, pid int) error {
	if pid < 1 || pid > MaxRunPID {
		return fmt.Errorf("%s %d out of range 1..%d", name, pid, MaxRunPID)
	}
	return nil
}

func checkRunTime(name, s string) error {
	if _, err := ParseRunTime(s); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// CheckRunInput validates an input digest (64 lowercase hex, or empty) and
// its character count.
func CheckRunInput(sha string, chars int64) error {
	if sha == "" {
		if chars != 0 {
			return errors.New("input_chars without input_sha256")
		}
		return nil
	}
	if !isHex64(sha) {
		return errors.New("input_sha256 is not 64 lowercase hex")
	}
	if chars < 0 || chars > MaxRunInputChars {
		return fmt.Errorf("input_chars %d out of range 0..%d", chars, int64(MaxRunInputChars))
	}
	return nil
}

// checkToken allows an opaque identifier: [A-Za-z0-9][A-Za-z0-9._-]*.
func checkToken(name, s string, max int) error {
	if len(s) == 0 || len(s) > max {
		return fmt.Errorf("%s is %d bytes, want 1..%d", name, len(s), max)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return fmt.Errorf("%s: byte %d not allowed", name, i)
		}
	}
	return nil
}

// isCode matches [a-z][a-z0-9_-]{0,max-1}.
func isCode(s string, max int) bool {
	if len(s) == 0 || len(s) > max || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// truncate bounds a rejected value quoted in an error message. Values that
// fail validation may be anything, so messages quote at most 16 bytes.
func truncate(s string) string {
	if len(s) > 16 {
		return s[:16] + "…"
	}
	return s
}
