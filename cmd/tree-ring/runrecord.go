package main

// The run recorder: every execution command brackets its work with
// run.started and a terminal run event (docs/runs.md). It is a library for
// commands; wiring one is a few lines:
//
//	func runX(ctx context.Context, g *Globals, o *xOptions, args []string) (err error) {
//		// ... validate args (usage errors are not runs) ...
//		scope, err := g.CLIScope() // or SessionScope(harness, sessionID)
//		if err != nil {
//			return err
//		}
//		st, err := g.OpenStore(false)
//		if err != nil {
//			return err
//		}
//		defer st.Close()
//		run, err := g.StartRun(ctx, st, RunSpec{Command: events.RunCmdX, Scope: scope})
//		if err != nil {
//			return err
//		}
//		defer run.End(ctx, &err) // failed/aborted/succeeded, unless FinishIn committed
//		// ... work; run.SetStage("publish"), run.SetItems(n) ...
//		return st.Update(ctx, func(tx *bolt.Tx) error {
//			// ... the command's own appends ...
//			return run.FinishIn(tx, nil) // run.finished rides this commit
//		})
//	}

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/projections"
)

// ScopeError reports a run scope that cannot be derived: the identity is
// missing or unsafe. Commands fail closed on it; the message never
// contains the identity itself.
type ScopeError struct {
	What   string // "source root", "session id", "harness"
	Reason string // "missing", "not a directory", "control character", ...
}

func (e *ScopeError) Error() string {
	return fmt.Sprintf("run scope: %s is %s; refusing to record or list runs without a safe identity", e.What, e.Reason)
}

// scopeDomain separates scope digests from every other SHA-256 we compute.
const scopeDomain = "tree-ring.run-scope.v1\x00"

func scopeKey(parts ...string) string {
	h := sha256.New()
	h.Write([]byte(scopeDomain))
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	sum := h.Sum(nil)
	return hex.EncodeToString(sum[:events.RunScopeKeyLen/2])
}

// CLIScope is the run scope of a CLI invocation: derived from the canonical
// (absolute, symlink-free) --source-root. The path itself is never stored.
func (g *Globals) CLIScope() (string, error) { return CLIScope(g.SourceRoot) }

// CLIScope derives the scope key of a project root. The root must exist and
// be a directory; a path with control characters or invalid UTF-8 is unsafe.
func CLIScope(sourceRoot string) (string, error) {
	if sourceRoot == "" {
		return "", &ScopeError{What: "source root", Reason: "missing"}
	}
	if reason := unsafeText(sourceRoot); reason != "" {
		return "", &ScopeError{What: "source root", Reason: reason}
	}
	abs, err := filepath.Abs(sourceRoot)
	if err != nil {
		return "", &ScopeError{What: "source root", Reason: "not resolvable"}
	}
	canon, err := filepath.EvalSymlinks(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", &ScopeError{What: "source root", Reason: "missing"}
	case err != nil:
		return "", &ScopeError{What: "source root", Reason: "not resolvable"}
	}
	fi, err := os.Stat(canon)
	if err != nil || !fi.IsDir() {
		return "", &ScopeError{What: "source root", Reason: "not a directory"}
	}
	return scopeKey("cli", canon), nil
}

// maxSessionChars bounds a session identity (the protocol's identity bound).
const maxSessionChars = 256

// SessionScope derives the run scope of one harness session from the
// authoritative session identity the harness supplied (hook stdin, the
// preflight's session id). The identity is never stored.
func SessionScope(harness, sessionID string) (string, error) {
	if harness == "" {
		return "", &ScopeError{What: "harness", Reason: "missing"}
	}
	if events.ValidHarnessID(harness) != nil {
		return "", &ScopeError{What: "harness", Reason: "not a harness id"}
	}
	if sessionID == "" {
		return "", &ScopeError{What: "session id", Reason: "missing"}
	}
	if reason := unsafeText(sessionID); reason != "" {
		return "", &ScopeError{What: "session id", Reason: reason}
	}
	switch {
	case strings.TrimSpace(sessionID) != sessionID:
		return "", &ScopeError{What: "session id", Reason: "padded with whitespace"}
	case utf8.RuneCountInString(sessionID) > maxSessionChars:
		return "", &ScopeError{What: "session id", Reason: fmt.Sprintf("longer than %d characters", maxSessionChars)}
	case strings.Contains(sessionID, "trcap_v1_"):
		return "", &ScopeError{What: "session id", Reason: "carrying a capability token"}
	}
	return scopeKey("session", harness, sessionID), nil
}

func unsafeText(s string) string {
	if !utf8.ValidString(s) {
		return "not valid UTF-8"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "containing a control character"
		}
	}
	return ""
}

// RunSpec describes a run about to start.
type RunSpec struct {
	// Command is one of the events.RunCmd* names.
	Command string
	// Scope is a key from CLIScope or SessionScope.
	Scope string
	// Harness is set by hook and preflight runs.
	Harness string
	// Stage is the first stage; "start" when empty.
	Stage string
	// InputSHA256 and InputChars describe the input when it is known before
	// the work (see InputDigest); otherwise call Run.SetInput later.
	InputSHA256 string
	InputChars  int64
}

// Run is one recorded execution. It is used by one goroutine (the
// command's) and lives from StartRun to its terminal event.
type Run struct {
	g       *Globals
	st      *bolt.Store
	f       *events.Factory
	id      string
	stream  string
	scope   string
	started time.Time
	stage   string
	input   struct {
		sha   string
		chars int64
	}
	tel     events.RunTelemetry
	telSet  bool
	pending bool // FinishIn appended run.finished to a tx not yet known committed
	done    bool
}

// runMaxRecover bounds how many running runs of a scope one start examines.
const runMaxRecover = projections.MaxRunsPerScope

// getpid is the pid written into run records; tests substitute it.
var getpid = os.Getpid

// ownRuns are the runs this process started and has not ended: a running
// record carrying our own pid is ours only if it is here; otherwise the
// process that wrote it is gone and the pid was reused by us.
var ownRuns sync.Map

// StartRun records run.started for spec in one commit (the run's one extra
// commit), together with run.interrupted for every running run of the same
// scope whose process is dead. It returns the run to end with FinishIn,
// Finish or End.
func (g *Globals) StartRun(ctx context.Context, st *bolt.Store, spec RunSpec) (*Run, error) {
	r, started, err := g.newRun(st, spec)
	if err != nil {
		return nil, err
	}
	var recovered int
	err = st.Update(ctx, func(tx *bolt.Tx) error {
		var err error
		recovered, err = r.appendStart(tx, started)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("start run: %w", err)
	}
	ownRuns.Store(r.id, struct{}{})
	g.Log.Debug().Str("run_id", r.id).Str("command", spec.Command).Str("scope", spec.Scope).
		Int("interrupted_recovered", recovered).Msg("run started")
	return r, nil
}

// StartRunIn records run.started inside the caller's transaction, for a
// command whose whole work is that one transaction (capture): the run and
// its work commit together or not at all, so the record costs no commit of
// its own and a command that ends up writing nothing (an exact retry)
// leaves no record. End it with FinishIn on the same tx.
func (g *Globals) StartRunIn(tx *bolt.Tx, st *bolt.Store, spec RunSpec) (*Run, error) {
	r, started, err := g.newRun(st, spec)
	if err != nil {
		return nil, err
	}
	if _, err := r.appendStart(tx, started); err != nil {
		return nil, fmt.Errorf("start run: %w", err)
	}
	ownRuns.Store(r.id, struct{}{})
	return r, nil
}

// newRun mints the run and its run.started event.
func (g *Globals) newRun(st *bolt.Store, spec RunSpec) (*Run, events.Envelope, error) {
	if spec.Stage == "" {
		spec.Stage = "start"
	}
	actor := "cli"
	if spec.Harness != "" {
		actor = spec.Harness
	}
	r := &Run{
		g: g, st: st, f: g.Factory(actor), scope: spec.Scope, stage: spec.Stage,
	}
	r.id = g.NewID().String()
	r.stream = events.RunStream(r.id)
	r.input.sha, r.input.chars = spec.InputSHA256, spec.InputChars
	r.started = g.Now()
	started, err := r.f.New(r.stream, events.TypeRunStarted, &events.RunStarted{
		RunID: r.id, ScopeKey: spec.Scope, Command: spec.Command, Harness: spec.Harness,
		Stage: spec.Stage, PID: getpid(), StartedAt: events.FormatRunTime(r.started),
		InputSHA256: spec.InputSHA256, InputChars: spec.InputChars,
	})
	if err != nil {
		return nil, events.Envelope{}, fmt.Errorf("start run: %w", err)
	}
	return r, started, nil
}

// appendStart appends run.interrupted for the scope's dead running runs and
// then started; it returns how many runs it closed.
func (r *Run) appendStart(tx *bolt.Tx, started events.Envelope) (int, error) {
	pid := getpid()
	recovered := 0
	running, err := projections.RunningRuns(tx.Projection(projections.RunsName), r.scope, runMaxRecover)
	if err != nil {
		return 0, err
	}
	for _, rr := range running {
		if processAlive(rr.RunID, rr.PID) {
			continue
		}
		stream := events.RunStream(rr.RunID)
		if tx.StreamVersion(stream) != 1 {
			continue // already ended; the index will catch up
		}
		ev, err := r.f.New(stream, events.TypeRunInterrupted, &events.RunInterrupted{
			RunID: rr.RunID, ScopeKey: r.scope, PID: rr.PID,
			DetectedAt: events.FormatRunTime(r.g.Now()), DetectedByPID: pid,
		})
		if err != nil {
			return 0, fmt.Errorf("interrupt run %s: %w", rr.RunID, err)
		}
		if _, err := tx.Append(stream, 1, ev); err != nil {
			return 0, fmt.Errorf("interrupt run %s: %w", rr.RunID, err)
		}
		recovered++
	}
	_, err = tx.Append(r.stream, 0, started)
	return recovered, err
}

// processAlive is kill(pid, 0): only ESRCH means dead. EPERM (someone
// else's live process) and any other error count as alive: a false-live
// record is preferred over interrupting a possibly live run. A pid equal to
// ours is alive only if this process started that run.
func processAlive(runID string, pid int) bool {
	if pid <= 0 {
		return false
	}
	if pid == getpid() {
		_, ours := ownRuns.Load(runID)
		return ours
	}
	err := killProbe(pid, 0)
	return !errors.Is(err, syscall.ESRCH)
}

// killProbe is kill(2); tests substitute it to reach EPERM as root.
var killProbe = syscall.Kill

// ID is the run id (a ULID).
func (r *Run) ID() string { return r.id }

// The setters take values chosen by the program (constants, counts, ids it
// minted), never input; an invalid value is a programming error and
// panics, so that it fails tests rather than a command's final commit.

// SetStage names the stage the command enters; the terminal event records
// the stage the run ended in ("done" on success).
func (r *Run) SetStage(stage string) {
	must(events.ValidRunStage(stage))
	r.stage = stage
}

// SetInput records the digest and character count of the command's input
// (see InputDigest and inputMeter).
func (r *Run) SetInput(sha256hex string, chars int64) {
	must(events.CheckRunInput(sha256hex, chars))
	r.input.sha, r.input.chars = sha256hex, chars
}

// SetItems records how many items the command processed.
func (r *Run) SetItems(n int64) {
	t := r.tel
	t.Items = &n
	r.setTelemetry(t)
}

// SetRecall records a preflight's query class and result count.
func (r *Run) SetRecall(queryClass string, resultCount int) {
	t := r.tel
	t.QueryClass, t.ResultCount = queryClass, &resultCount
	r.setTelemetry(t)
}

// SetReceipt records the id of the receipt a preflight wrote.
func (r *Run) SetReceipt(receiptID string) {
	t := r.tel
	t.ReceiptID = receiptID
	r.setTelemetry(t)
}

// setTelemetry checks t before keeping it, so a rejected value leaves the
// run's telemetry as it was.
func (r *Run) setTelemetry(t events.RunTelemetry) {
	must(t.Check())
	r.tel, r.telSet = t, true
}

func must(err error) {
	if err != nil {
		panic("run recorder: " + err.Error())
	}
}

// FinishIn appends run.finished for cause (nil: succeeded) to the command's
// own final write transaction, so ending the run costs no extra commit. If
// that transaction does not commit, End records the outcome on its own.
// When another process already marked the run interrupted (it believed our
// pid dead), run.finished still follows it: the run's own outcome wins.
func (r *Run) FinishIn(tx *bolt.Tx, cause error) error {
	if r.done {
		return nil
	}
	ok, version, err := r.canFinish(tx)
	if err != nil || !ok {
		return err
	}
	ev, err := r.finishedEvent(cause)
	if err != nil {
		return err
	}
	if _, err := tx.Append(r.stream, int64(version), ev); err != nil {
		return fmt.Errorf("finish run %s: %w", r.id, err)
	}
	r.pending = true
	return nil
}

// Finish records the run's outcome in its own commit. ctx may be cancelled
// (a signal): the write still happens.
func (r *Run) Finish(ctx context.Context, cause error) error {
	if r.done {
		return nil
	}
	ev, err := r.finishedEvent(cause)
	if err != nil {
		return err
	}
	// A signal cancels ctx; the outcome must still be written.
	wctx := context.WithoutCancel(ctx)
	err = r.st.Update(wctx, func(tx *bolt.Tx) error {
		ok, version, err := r.canFinish(tx)
		if err != nil || !ok {
			return err
		}
		_, err = tx.Append(r.stream, int64(version), ev)
		return err
	})
	if err != nil {
		return fmt.Errorf("finish run %s: %w", r.id, err)
	}
	r.end()
	r.g.Log.Debug().Str("run_id", r.id).Msg("run finished")
	return nil
}

// End is deferred right after StartRun with the command's named error. It
// records the outcome of *errp unless FinishIn's transaction committed
// (checked against the ledger with a read, so a rolled-back FinishIn is not
// lost and a committed one costs no further commit, even if the command
// failed afterwards). A failure to write the record becomes the command's
// error only if the command succeeded; otherwise the command's error stands
// and the write failure is logged (as a diagnostic code).
func (r *Run) End(ctx context.Context, errp *error) {
	if r.done {
		return
	}
	var cause error
	if errp != nil {
		cause = *errp
	}
	if r.pending && r.committed() {
		r.end()
		r.g.Log.Debug().Str("run_id", r.id).Msg("run finished with the command's commit")
		return
	}
	if err := r.Finish(ctx, cause); err != nil {
		if errp != nil && *errp == nil {
			*errp = err
		} else {
			r.g.Log.Error().Str("run_id", r.id).Str("diagnostic", diagnosticOf(err)).Msg("recording the run outcome failed")
		}
	}
}

func (r *Run) end() {
	r.done, r.pending = true, false
	ownRuns.Delete(r.id)
}

// committed reports whether the ledger already holds the run's outcome:
// its stream has a terminal event and the projection does not wait for a
// run.finished (as it does after another process's run.interrupted).
func (r *Run) committed() bool {
	var ok bool
	err := r.st.View(func(rd *bolt.Reader) error {
		ok = rd.StreamVersion(r.stream) >= 2 && !projections.AwaitsFinish(rd.Projection(projections.RunsName), r.scope, r.id)
		return nil
	})
	return err == nil && ok
}

// canFinish reports whether run.finished may be appended now and at which
// expected version: the stream holds only run.started, or it ends with a
// run.interrupted that the projection holds open.
func (r *Run) canFinish(tx *bolt.Tx) (bool, uint64, error) {
	switch v := tx.StreamVersion(r.stream); {
	case v == 0:
		return false, 0, fmt.Errorf("finish run %s: the run was never started", r.id)
	case v == 1:
		return true, 1, nil
	default:
		return projections.AwaitsFinish(tx.Projection(projections.RunsName), r.scope, r.id), v, nil
	}
}

func (r *Run) finishedEvent(cause error) (events.Envelope, error) {
	now := r.g.Now()
	d := now.Sub(r.started).Milliseconds()
	d = max(0, min(d, events.MaxRunDurationMS))
	p := &events.RunFinished{
		RunID: r.id, ScopeKey: r.scope, Stage: r.stage, EndedAt: events.FormatRunTime(now), DurationMS: d,
		InputSHA256: r.input.sha, InputChars: r.input.chars,
	}
	switch {
	case cause == nil:
		p.Status, p.Stage = events.RunStatusSucceeded, "done"
	case errors.Is(cause, context.Canceled):
		p.Status = events.RunStatusAborted
	default:
		p.Status, p.Diagnostic = events.RunStatusFailed, diagnosticOf(cause)
	}
	if r.telSet {
		t := r.tel
		p.Telemetry = &t
	}
	ev, err := r.f.New(r.stream, events.TypeRunFinished, p)
	if err != nil {
		return events.Envelope{}, fmt.Errorf("finish run %s: %w", r.id, err)
	}
	return ev, nil
}

// diagnosticError attaches a diagnostic code to an error. Commands wrap
// errors they can name: `return withDiagnostic("receipt_write", err)`.
type diagnosticError struct {
	code string
	err  error
}

func (e *diagnosticError) Error() string      { return e.err.Error() }
func (e *diagnosticError) Unwrap() error      { return e.err }
func (e *diagnosticError) Diagnostic() string { return e.code }

// withDiagnostic tags err with a diagnostic code ([a-z][a-z0-9_-]*, at most
// 48 bytes; an invalid code is replaced by "error").
func withDiagnostic(code string, err error) error {
	if err == nil {
		return nil
	}
	return &diagnosticError{code: code, err: err}
}

// diagnosticOf maps an error to a bounded code: never the error's text,
// which may carry input. The first match wins: an explicit code, then the
// typed errors of the ledger, the codec and the filesystem.
func diagnosticOf(err error) string {
	var (
		d        interface{ Diagnostic() string }
		usage    *usageError
		scope    *ScopeError
		locked   *bolt.LockedError
		corrupt  *bolt.CorruptError
		verify   *bolt.VerifyError
		wrongVer *bolt.WrongExpectedVersionError
		conflict *bolt.IDConflictError
		notFound *bolt.NotFoundError
		badRoot  *bolt.InvalidRootError
		unkKey   *events.UnknownKeyError
		dupKey   *events.DuplicateKeyError
		unkType  *events.UnknownTypeError
		badHash  *events.HashMismatchError
	)
	switch {
	case errors.As(err, &d):
		if c := d.Diagnostic(); events.ValidDiagnostic(c) == nil {
			return c
		}
		return "error"
	case errors.As(err, &usage):
		return "usage"
	case errors.As(err, &scope):
		return "scope_unsafe"
	case errors.As(err, &locked):
		return "ledger_locked"
	case errors.As(err, &corrupt):
		return "ledger_corrupt"
	case errors.As(err, &verify):
		return "verify_failed"
	case errors.As(err, &wrongVer):
		return "concurrent_write"
	case errors.As(err, &conflict):
		return "id_conflict"
	case errors.As(err, &notFound):
		return "no_ledger"
	case errors.As(err, &badRoot):
		return "invalid_root"
	case errors.As(err, &unkKey):
		return "input_unknown_key"
	case errors.As(err, &dupKey):
		return "input_duplicate_key"
	case errors.As(err, &unkType):
		return "input_unknown_event_type"
	case errors.As(err, &badHash):
		return "input_hash_mismatch"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, fs.ErrNotExist):
		return "not_found"
	case errors.Is(err, fs.ErrPermission):
		return "permission_denied"
	case errors.Is(err, syscall.ENOSPC):
		return "disk_full"
	}
	return "error"
}

// inputMeter is an io.Writer that digests a command's input as it is read:
// SHA-256 and the UTF-8 character count (bytes that start a character).
type inputMeter struct {
	sum   hash.Hash
	chars int64
}

func newInputMeter() *inputMeter { return &inputMeter{sum: sha256.New()} }

func (m *inputMeter) Write(p []byte) (int, error) {
	m.sum.Write(p)
	for _, c := range p {
		if c&0xC0 != 0x80 {
			m.chars++
		}
	}
	return len(p), nil
}

// Digest returns the lowercase hex SHA-256 and the character count so far.
func (m *inputMeter) Digest() (string, int64) {
	return hex.EncodeToString(m.sum.Sum(nil)), m.chars
}

// InputDigest digests an input held in memory (hook stdin).
func InputDigest(b []byte) (string, int64) {
	m := newInputMeter()
	m.Write(b)
	return m.Digest()
}
