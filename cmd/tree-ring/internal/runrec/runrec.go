// Package runrec is the run recorder: every execution command brackets its
// work with run.started and a terminal run event (docs/runs.md). Wiring one
// into a command is a few lines:
//
//	func runX(ctx context.Context, g *Globals, o *xOptions, args []string) (err error) {
//		// ... validate args (usage errors are not runs) ...
//		scope, err := g.CLIScope() // or events.SessionScope(harness, sessionID)
//		if err != nil {
//			return err
//		}
//		st, err := g.OpenStore(false)
//		if err != nil {
//			return err
//		}
//		defer st.Close()
//		run, err := g.StartRun(ctx, st, runrec.Spec{Command: events.RunCmdX, Scope: scope})
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
//
// It writes the ledger (bolt), reads the run ledger projection and logs
// with zerolog, so it sits at the command layer: only cmd/tree-ring
// imports it. The scope keys themselves are pure and live beside the run
// events (events.SessionScope, events.CLIScopeKey).
package runrec

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/rs/zerolog"

	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/projections"
)

// Recorder starts runs with the process's injected clock, id source, pid
// and logger. One Recorder serves one process (one command invocation):
// it remembers the runs it started and has not ended, so that a running
// record carrying its own pid is recognized as its own. It is safe for
// concurrent use; each Run belongs to one goroutine.
type Recorder struct {
	Now   func() time.Time
	NewID func() ulid.ULID
	// PID is the pid written into run records (os.Getpid when nil).
	PID func() int
	Log zerolog.Logger
	// Diagnose maps a failure to its bounded diagnostic code (the
	// command's error table); never the error's text.
	Diagnose func(error) string
	// Kill is kill(2), probing a run's process (probeProcess when nil;
	// tests reach EPERM as root).
	Kill func(pid int, sig syscall.Signal) error

	// own are the runs this recorder started and has not ended: a running
	// record carrying our own pid is ours only if it is here; otherwise
	// the process that wrote it is gone and the pid was reused by us.
	own sync.Map
}

func (rc *Recorder) pid() int {
	if rc.PID == nil {
		return os.Getpid()
	}
	return rc.PID()
}

// CLIScope derives the scope key of a project root. The root must exist and
// be a directory; a path with control characters or invalid UTF-8 is unsafe.
// The path itself is never stored.
func CLIScope(sourceRoot string) (string, error) {
	if sourceRoot == "" {
		return "", &events.ScopeError{What: "source root", Reason: "missing"}
	}
	if reason := events.UnsafeScopeText(sourceRoot); reason != "" {
		return "", &events.ScopeError{What: "source root", Reason: reason}
	}
	abs, err := filepath.Abs(sourceRoot)
	if err != nil {
		return "", &events.ScopeError{What: "source root", Reason: "not resolvable"}
	}
	canon, err := filepath.EvalSymlinks(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", &events.ScopeError{What: "source root", Reason: "missing"}
	case err != nil:
		return "", &events.ScopeError{What: "source root", Reason: "not resolvable"}
	}
	fi, err := os.Stat(canon)
	if err != nil || !fi.IsDir() {
		return "", &events.ScopeError{What: "source root", Reason: "not a directory"}
	}
	return events.CLIScopeKey(canon), nil
}

// Spec describes a run about to start.
type Spec struct {
	// Command is one of the events.RunCmd* names.
	Command string
	// Scope is a key from CLIScope or events.SessionScope.
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
// command's) and lives from Start to its terminal event.
type Run struct {
	rc      *Recorder
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
	// startEv is the run.started of a run from Begin: appended by StartIn
	// with the command's work, or, if that transaction did not commit,
	// by Finish together with the outcome, in one commit.
	startEv *events.Envelope
	// onFail adds the command's own record of a failure to the commit that
	// records the failed run (OnFail).
	onFail func(tx *bolt.Tx, cause error, diagnostic string) error
}

// OnFail has Finish (and so End) call fn in the transaction that records
// a failed outcome (not an aborted one), with the cause and its diagnostic
// code, so that the command's own failure event (a preflight.failed)
// commits together with its failed run, in one commit.
func (r *Run) OnFail(fn func(tx *bolt.Tx, cause error, diagnostic string) error) { r.onFail = fn }

// maxRecover bounds how many running runs of a scope one start examines.
const maxRecover = projections.MaxRunsPerScope

// Start records run.started for spec in one commit (the run's one extra
// commit), together with run.interrupted for every running run of the same
// scope whose process is dead. It returns the run to end with FinishIn,
// Finish or End.
func (rc *Recorder) Start(ctx context.Context, st *bolt.Store, spec Spec) (*Run, error) {
	r, started, err := rc.newRun(st, spec)
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
	rc.own.Store(r.id, struct{}{})
	rc.Log.Debug().Str("run_id", r.id).Str("command", spec.Command).Str("scope", spec.Scope).
		Int("interrupted_recovered", recovered).Msg("run started")
	return r, nil
}

// StartIn records run.started inside the caller's transaction, for a
// command whose whole work is that one transaction (capture): the run and
// its work commit together or not at all, so the record costs no commit of
// its own and a command that ends up writing nothing (an exact retry)
// leaves no record. End it with FinishIn on the same tx.
func (rc *Recorder) StartIn(tx *bolt.Tx, st *bolt.Store, spec Spec) (*Run, error) {
	r, started, err := rc.newRun(st, spec)
	if err != nil {
		return nil, err
	}
	if _, err := r.appendStart(tx, started); err != nil {
		return nil, fmt.Errorf("start run: %w", err)
	}
	rc.own.Store(r.id, struct{}{})
	return r, nil
}

// Begin mints a run without writing anything, for a command whose work is
// one transaction that must also record a failure (the hook): StartIn
// appends run.started to that transaction, FinishIn its outcome, and if it
// does not commit, End records run.started and the failure together in one
// commit. Either way the run costs the command no commit of its own.
func (rc *Recorder) Begin(st *bolt.Store, spec Spec) (*Run, error) {
	r, started, err := rc.newRun(st, spec)
	if err != nil {
		return nil, err
	}
	r.startEv = &started
	rc.own.Store(r.id, struct{}{})
	return r, nil
}

// StartIn appends the run.started of a run from Begin to tx (with
// run.interrupted for the scope's dead running runs).
func (r *Run) StartIn(tx *bolt.Tx) error {
	if r.startEv == nil {
		return fmt.Errorf("start run %s: not from Begin", r.id)
	}
	if _, err := r.appendStart(tx, *r.startEv); err != nil {
		return fmt.Errorf("start run: %w", err)
	}
	return nil
}

// newRun mints the run and its run.started event.
func (rc *Recorder) newRun(st *bolt.Store, spec Spec) (*Run, events.Envelope, error) {
	if spec.Stage == "" {
		spec.Stage = "start"
	}
	actor := "cli"
	if spec.Harness != "" {
		actor = spec.Harness
	}
	r := &Run{
		rc: rc, st: st, f: &events.Factory{Now: rc.Now, NewID: rc.NewID, Actor: actor}, scope: spec.Scope, stage: spec.Stage,
	}
	r.id = rc.NewID().String()
	r.stream = events.RunStream(r.id)
	r.input.sha, r.input.chars = spec.InputSHA256, spec.InputChars
	r.started = rc.Now()
	started, err := r.f.New(r.stream, events.TypeRunStarted, &events.RunStarted{
		RunID: r.id, ScopeKey: spec.Scope, Command: spec.Command, Harness: spec.Harness,
		Stage: spec.Stage, PID: rc.pid(), StartedAt: events.FormatRunTime(r.started),
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
	pid := r.rc.pid()
	recovered := 0
	running, err := projections.RunningRuns(tx.Projection(projections.RunsName), r.scope, maxRecover)
	if err != nil {
		return 0, err
	}
	for _, rr := range running {
		if r.rc.processAlive(rr.RunID, rr.PID) {
			continue
		}
		stream := events.RunStream(rr.RunID)
		if tx.StreamVersion(stream) != 1 {
			continue // already ended; the index will catch up
		}
		ev, err := r.f.New(stream, events.TypeRunInterrupted, &events.RunInterrupted{
			RunID: rr.RunID, ScopeKey: r.scope, PID: rr.PID,
			DetectedAt: events.FormatRunTime(r.rc.Now()), DetectedByPID: pid,
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

// Alive reports whether the process of a running record (run id, pid) is
// alive, as a start decides before interrupting it.
func (rc *Recorder) Alive(runID string, pid int) bool { return rc.processAlive(runID, pid) }

// processAlive is kill(pid, 0): only ESRCH means dead. EPERM (someone
// else's live process) and any other error count as alive: a false-live
// record is preferred over interrupting a possibly live run. A pid equal to
// ours is alive only if this process started that run.
func (rc *Recorder) processAlive(runID string, pid int) bool {
	if pid <= 0 {
		return false
	}
	if pid == rc.pid() {
		_, ours := rc.own.Load(runID)
		return ours
	}
	kill := rc.Kill
	if kill == nil {
		kill = probeProcess // kill(2), or its equivalent on Windows (process_windows.go)
	}
	return !errors.Is(kill(pid, 0), syscall.ESRCH)
}

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
// (see InputDigest and Meter).
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
	failed := cause != nil && !errors.Is(cause, context.Canceled)
	// A signal cancels ctx; the outcome must still be written.
	wctx := context.WithoutCancel(ctx)
	err = r.st.Update(wctx, func(tx *bolt.Tx) error {
		if r.startEv != nil && tx.StreamVersion(r.stream) == 0 {
			// Begin's run whose StartIn did not commit: start and
			// outcome share this one commit.
			if _, err := r.appendStart(tx, *r.startEv); err != nil {
				return err
			}
		}
		ok, version, err := r.canFinish(tx)
		if err != nil || !ok {
			return err
		}
		if _, err := tx.Append(r.stream, int64(version), ev); err != nil {
			return err
		}
		if r.onFail != nil && failed {
			return r.onFail(tx, cause, r.rc.diagnose(cause))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("finish run %s: %w", r.id, err)
	}
	r.end()
	r.rc.Log.Debug().Str("run_id", r.id).Msg("run finished")
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
		r.rc.Log.Debug().Str("run_id", r.id).Msg("run finished with the command's commit")
		return
	}
	if err := r.Finish(ctx, cause); err != nil {
		if errp != nil && *errp == nil {
			*errp = err
		} else {
			r.rc.Log.Error().Str("run_id", r.id).Str("diagnostic", r.rc.diagnose(err)).Msg("recording the run outcome failed")
		}
	}
}

func (r *Run) end() {
	r.done, r.pending = true, false
	r.rc.own.Delete(r.id)
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
	now := r.rc.Now()
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
		p.Status, p.Diagnostic = events.RunStatusFailed, r.rc.diagnose(cause)
	}
	if r.telSet {
		t := r.tel
		if cause != nil {
			t.ReceiptID = "" // nothing the failed run wrote stands
		}
		p.Telemetry = &t
	}
	ev, err := r.f.New(r.stream, events.TypeRunFinished, p)
	if err != nil {
		return events.Envelope{}, fmt.Errorf("finish run %s: %w", r.id, err)
	}
	return ev, nil
}

// diagnose is Diagnose, "error" without one or for an invalid code.
func (rc *Recorder) diagnose(err error) string {
	if rc.Diagnose == nil {
		return "error"
	}
	if c := rc.Diagnose(err); events.ValidDiagnostic(c) == nil {
		return c
	}
	return "error"
}

// Meter is an io.Writer that digests a command's input as it is read:
// SHA-256 and the UTF-8 character count (bytes that start a character).
type Meter struct {
	sum   hash.Hash
	chars int64
}

// NewMeter returns an empty meter.
func NewMeter() *Meter { return &Meter{sum: sha256.New()} }

func (m *Meter) Write(p []byte) (int, error) {
	m.sum.Write(p)
	m.chars += int64(len(p) - continuationBytes(p))
	return len(p), nil
}

// continuationBytes counts the bytes 10xxxxxx in p, eight at a time (an
// import digests its whole input: a byte loop cost a tenth of the command).
func continuationBytes(p []byte) int {
	const high = 0x8080808080808080
	n := 0
	for ; len(p) >= 8; p = p[8:] {
		w := binary.LittleEndian.Uint64(p)
		n += bits.OnesCount64(w &^ (w << 1) & high) // bit 7 set, bit 6 clear
	}
	for _, c := range p {
		if c&0xC0 == 0x80 {
			n++
		}
	}
	return n
}

// Digest returns the lowercase hex SHA-256 and the character count so far.
func (m *Meter) Digest() (string, int64) {
	return hex.EncodeToString(m.sum.Sum(nil)), m.chars
}

// InputDigest digests an input held in memory (hook stdin).
func InputDigest(b []byte) (string, int64) {
	m := NewMeter()
	m.Write(b)
	return m.Digest()
}
