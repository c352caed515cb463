package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/tree-ring/internal/runrec"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/fsm"
	"github.com/tree-ring/tree-ring/projections"
	"github.com/tree-ring/tree-ring/projections/recall"
)

type preflightOptions struct {
	Harness              string
	InputJSONStdin       bool
	ContextFormat        string
	AgentProfile         string
	WorkflowID           string
	SessionID            string
	CanonicalProjectRoot string
}

func (o *preflightOptions) AddFlags(fs *pflag.FlagSet) {
	preflights := harnessIDs(func(a *adapters.Adapter) bool { return a.Publishes() })
	stdin := harnessIDs(func(a *adapters.Adapter) bool { return a.Publishes() && !a.DirectPreflight })
	direct := harnessIDs(func(a *adapters.Adapter) bool { return a.DirectPreflight })
	fs.StringVar(&o.Harness, "harness", "", "harness id ("+strings.Join(preflights, ", ")+")")
	fs.BoolVar(&o.InputJSONStdin, "input-json-stdin", false, "read the adapter's identity object from stdin ("+strings.Join(stdin, ", ")+")")
	fs.StringVar(&o.ContextFormat, "context-format", preflight.FormatJSON, "output shape: "+strings.Join(preflight.Formats, ", "))
	fs.StringVar(&o.AgentProfile, "agent-profile", "", "direct mode ("+strings.Join(direct, ", ")+", json): the worker's agent profile")
	fs.StringVar(&o.WorkflowID, "workflow-id", "", "direct mode: the workflow id")
	fs.StringVar(&o.SessionID, "session-id", "", "direct mode: the session id")
	fs.StringVar(&o.CanonicalProjectRoot, "canonical-project-root", "", "direct mode: the canonical project whose store --root is not (the result is active-isolated; the canonical store is not touched)")
}

func init() {
	register("integrations preflight", "", "scoped recall for a new harness session: deliver the safe context and record a receipt", runPreflight)
}

func runPreflight(ctx context.Context, g *Globals, o *preflightOptions, args []string) error {
	if len(args) > 0 {
		return usagef("integrations preflight takes no arguments")
	}
	a, err := harnessFlag(o.Harness)
	if err != nil {
		return err
	}
	if err := o.check(a); err != nil {
		return err
	}
	loc, absent, err := locateStore(g)
	if err != nil {
		return err
	}
	if absent {
		if _, unmounted := unreachableProject(g); unmounted && a.PluginDescriptor && g.Getenv(preflight.DescriptorEnv) != "" {
			return preflight.ErrProjectUnreachable
		}
		return fmt.Errorf("no Tree Ring store at --root; run `tree-ring init` first")
	}
	req, err := o.request(g, a, loc)
	if err != nil {
		return err
	}
	job, err := o.delivery(g, a, loc, req)
	if err != nil {
		return err
	}
	return deliver(ctx, g, loc, job, func(out delivered) []byte {
		if o.ContextFormat == preflight.FormatClaudeSessionStart {
			return preflight.HookOutput(preflight.SessionStart, out.context)
		}
		return preflight.JSONOutput(out.context, out.receipt.State, out.receipt.Summary())
	})
}

// check validates the flags' combination for harness a.
func (o *preflightOptions) check(a *adapters.Adapter) error {
	if !slices.Contains(preflight.Formats, o.ContextFormat) {
		return usagef("--context-format %q: want one of %s", o.ContextFormat, strings.Join(preflight.Formats, ", "))
	}
	direct := o.AgentProfile != "" || o.WorkflowID != "" || o.SessionID != "" || o.CanonicalProjectRoot != ""
	if o.InputJSONStdin && direct {
		return usagef("--agent-profile, --workflow-id, --session-id and --canonical-project-root are direct-mode flags; they cannot be combined with --input-json-stdin")
	}
	return preflight.CheckContract(a.ID, o.InputJSONStdin, o.ContextFormat)
}

// request is the validated session: the adapter's stdin object (whose
// cwd, when given, must be inside the project) or the direct-mode flags.
func (o *preflightOptions) request(g *Globals, a *adapters.Adapter, loc storeLoc) (preflight.Request, error) {
	if !o.InputJSONStdin {
		return preflight.DirectRequest(o.AgentProfile, o.WorkflowID, o.SessionID)
	}
	data, err := readBounded(g.Stdin, adapters.MaxStdinBytes, "adapter preflight stdin exceeds 1 MiB")
	if err != nil {
		return preflight.Request{}, err
	}
	req, err := preflight.ParseAdapter(a.ID, data)
	if err == nil && req.Cwd != "" {
		err = checkCwd(req.Cwd, loc.project)
	}
	return req, err
}

// delivery is the preflight to deliver: its run scope, whether it is
// isolated (--canonical-project-root), and a plugin's live descriptor.
func (o *preflightOptions) delivery(g *Globals, a *adapters.Adapter, loc storeLoc, req preflight.Request) (delivery, error) {
	job := delivery{adapter: a, identity: req.Identity, taskHint: req.TaskHint, runCmd: events.RunCmdIntegrationsPreflight}
	var err error
	if job.scope, err = events.SessionScope(a.ID, req.Identity.SessionID); err != nil {
		return job, err
	}
	if o.CanonicalProjectRoot != "" {
		if err := checkIsolated(loc, o.CanonicalProjectRoot); err != nil {
			return job, err
		}
		job.isolated = true
	}
	if a.PluginDescriptor {
		d, err := preflight.LoadDescriptor(g.Getenv(preflight.DescriptorEnv), loc.project)
		if err != nil {
			return job, err
		}
		job.plugin = &d
	}
	return job, nil
}

// storeLoc is where a hook or preflight works: the store directory named by
// --root and the project that contains it. Absolute paths stay in memory;
// they never enter events, receipts, output or error messages.
type storeLoc struct {
	store   string // absolute, lexical --root
	project string // canonical project root (the parent of the store)
}

// locateStore resolves --root, which must name a directory called
// .tree-ring (the hook's command line passes "$project_root/.tree-ring").
// absent is true, with a nil error, when neither an entry nor a symlink
// exists there: an uninitialized checkout (a linked worktree inheriting the
// hooks), where the hook does nothing. A symlink, a file, or a symlinked
// project directory is an error.
func locateStore(g *Globals) (loc storeLoc, absent bool, err error) {
	abs, err := filepath.Abs(g.Root)
	if err != nil {
		return loc, false, fmt.Errorf("--root: %w", unwrapPath(err))
	}
	if filepath.Base(abs) != adapters.StoreDir {
		return loc, false, fmt.Errorf("--root must be a project's %s directory", adapters.StoreDir)
	}
	switch fi, err := os.Lstat(abs); {
	case errors.Is(err, fs.ErrNotExist):
		return loc, true, nil
	case err != nil:
		return loc, false, fmt.Errorf("--root: %w", unwrapPath(err))
	case fi.Mode()&fs.ModeSymlink != 0:
		return loc, false, fmt.Errorf("--root is a symlink; Tree Ring refuses to follow it")
	case !fi.IsDir():
		return loc, false, fmt.Errorf("--root is not a directory")
	}
	parent := filepath.Dir(abs)
	if fi, err := os.Lstat(parent); err != nil {
		return loc, false, fmt.Errorf("project root: %w", unwrapPath(err))
	} else if fi.Mode()&fs.ModeSymlink != 0 {
		return loc, false, fmt.Errorf("the project directory is a symlink; run Tree Ring from the real project path")
	}
	canonical, err := adapters.CanonicalProjectRoot(parent)
	if err != nil {
		return loc, false, fmt.Errorf("project root: %w", unwrapPath(err))
	}
	return storeLoc{store: abs, project: canonical}, false, nil
}

// readBounded reads all of r, refusing more than limit bytes.
func readBounded(r io.Reader, limit int, tooLarge string) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("read stdin: %w", unwrapPath(err))
	}
	if len(data) > limit {
		return nil, errors.New(tooLarge)
	}
	return data, nil
}

// checkCwd requires the host's working directory to resolve to a
// directory inside the project (relative values resolve against this
// process's directory). The path is never echoed.
func checkCwd(cwd, project string) error {
	abs, err := filepath.Abs(cwd)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return errors.New("cwd does not resolve to an existing directory")
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return errors.New("cwd is not a directory")
	}
	if abs != project && !strings.HasPrefix(abs, project+string(filepath.Separator)) {
		return errors.New("cwd is outside the activated project")
	}
	return nil
}

// checkIsolated validates --canonical-project-root against the memory
// root's project: both manifests exist and name their own roots, and the
// two roots differ in inode and store id. Only the canonical project's
// manifest is read; its store is never opened.
func checkIsolated(loc storeLoc, canonicalArg string) error {
	canonical, err := adapters.CanonicalProjectRoot(canonicalArg)
	if err != nil {
		return preflight.ErrIsolatedRoots
	}
	manifestOf := func(dir string) (adapters.Manifest, error) {
		root, err := adapters.OpenProjectRoot(dir)
		if err != nil {
			return adapters.Manifest{}, err
		}
		defer root.Close()
		m, _, exists, err := adapters.LoadManifest(root)
		if err == nil && (!exists || m.ProjectRootFingerprint != adapters.ProjectRootFingerprint(dir)) {
			err = preflight.ErrIsolatedRoots
		}
		return m, err
	}
	cm, err := manifestOf(canonical)
	if err != nil {
		return preflight.ErrIsolatedRoots
	}
	mm, err := manifestOf(loc.project)
	if err != nil {
		return preflight.ErrIsolatedRoots
	}
	a, err1 := os.Stat(canonical)
	b, err2 := os.Stat(loc.project)
	if err1 != nil || err2 != nil || os.SameFile(a, b) || cm.StoreID == mm.StoreID {
		return preflight.ErrIsolatedRoots
	}
	return nil
}

// delivery is one preflight to deliver.
type delivery struct {
	adapter  *adapters.Adapter
	identity preflight.Identity
	taskHint string // raw; classified by recall, never stored
	isolated bool   // --canonical-project-root: active-isolated
	plugin   *preflight.Descriptor
	// The run record (docs/runs.md): the command, the session scope and
	// the raw input's digest (never the input).
	runCmd string
	scope  string
	input  []byte
}

// delivered is what the caller's print renders.
type delivered struct {
	context string
	receipt receipt.Receipt
}

// hookLockTimeout is --lock-timeout's default for the preflight and the
// hook: hosts bound the hook to ten seconds, and concurrent session starts
// queue on the lock.
const hookLockTimeout = 8 * time.Second

func (*preflightOptions) lockTimeout() time.Duration { return hookLockTimeout }

// deliver runs a preflight, prints its output and records it
// (preflight.Deliver, over the ledger under --root): verify the activation
// contract on disk, then, holding the ledger's exclusive lock for the
// whole of it, record the run, the plan and the receipt in ONE write
// transaction and write the output (print renders it) before the commit.
// If a failed transaction had written the output in full, the command
// exits non-zero, which every client takes as a failed hook and discards
// the output (docs/preflight.md). A failure before the output prints
// nothing.
func deliver(ctx context.Context, g *Globals, loc storeLoc, d delivery, print func(delivered) []byte) (err error) {
	start := g.Now()
	root, m, checked, err := loadContract(loc, d.adapter)
	if err == nil {
		err = preflight.Admit(checked, d.plugin)
		if err != nil {
			root.Close()
		}
	}
	if err != nil {
		recordRefusal(ctx, g, loc, d, &err)
		return err
	}
	defer root.Close()
	st, err := openDeliveryStore(g, loc)
	if err != nil {
		return err
	}
	defer st.Close()
	run, err := beginDeliveryRun(ctx, g, st, d)
	if err != nil {
		return err
	}
	defer run.End(ctx, &err)
	// A host that closed its end of stdout must make the write fail with
	// EPIPE, not kill this process by SIGPIPE in the middle of the
	// transaction (the Go runtime's default for fd 1): then the run is
	// recorded failed instead of left running.
	signal.Ignore(syscall.SIGPIPE)
	printed, err := preflight.Deliver(ctx, deliveryStore{ctx: ctx, st: st, run: run}, preflight.Delivery{
		Job: preflight.Job{Checked: checked, Manifest: m, Project: loc.project, Identity: d.identity,
			TaskHint: d.taskHint, Isolated: d.isolated, Plugin: d.plugin},
		Deps: preflight.Deps{Start: start, Now: g.Now, NewID: g.NewID, NewReceiptID: g.NewReceiptID},
		Root: root, Out: g.Stdout, Fault: g.seams.CommitFault,
		Render: func(p preflight.Plan) []byte { return print(delivered{context: p.Context, receipt: p.Receipt}) },
	})
	var oe *preflight.OutputError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &oe): // names no path; its cause is the message
		return err
	case printed:
		return &deliveryError{err: pathless(err)}
	}
	return pathless(err)
}

// recordRefusal records a delivery refused before its run began (the
// contract on disk, the admission) as a failed run, with the harness's
// transition (bridge.drift_detected for a changed bridge), in
// one commit, so the timeline says when proof stopped (docs/runs.md). It
// writes only an existing ledger of this project: nothing for a manifest
// that names another root (a copy) or a checkout without a ledger. A
// failure to record is logged; the refusal stands as the hook's answer.
func recordRefusal(ctx context.Context, g *Globals, loc storeLoc, d delivery, errp *error) {
	if errors.Is(*errp, preflight.ErrRootMismatch) {
		return
	}
	if _, err := os.Lstat(filepath.Join(loc.store, bolt.LedgerFile)); err != nil {
		return
	}
	st, err := g.OpenStore(false)
	if err != nil {
		return
	}
	defer st.Close()
	run, err := beginDeliveryRun(ctx, g, st, d)
	if err != nil {
		return
	}
	cause := *errp
	run.End(ctx, &cause)
}

// openDeliveryStore opens the ledger for writing; the ledger must exist.
func openDeliveryStore(g *Globals, loc storeLoc) (*bolt.Store, error) {
	if _, err := os.Lstat(filepath.Join(loc.store, bolt.LedgerFile)); err != nil {
		return nil, g.noLedger(errors.New("no Tree Ring ledger under --root; run `tree-ring init` first"))
	}
	st, err := g.OpenStore(false)
	if err != nil {
		return nil, pathless(err)
	}
	return st, nil
}

// beginDeliveryRun mints the delivery's run. The run rides the receipt
// transaction (StartIn, FinishIn); if that does not commit, End records
// the failed run in one commit.
func beginDeliveryRun(ctx context.Context, g *Globals, st *bolt.Store, d delivery) (*Run, error) {
	sha, chars := runrec.InputDigest(d.input)
	if d.input == nil {
		sha, chars = "", 0
	}
	run, err := g.BeginRun(st, RunSpec{Command: d.runCmd, Scope: d.scope, Harness: d.adapter.ID, Stage: "preflight", InputSHA256: sha, InputChars: chars})
	if err != nil {
		return nil, err
	}
	// A failed preflight moves the harness, in the commit that records the
	// failed run: to needs-user-review when its bridge or adapter changed
	// (drift), otherwise to failed with the run's diagnostic code (a
	// changed program among them: its repair is init or chmod); status
	// shows it until a review or a preflight succeeds.
	run.OnFail(func(tx *bolt.Tx, cause error, code string) error {
		a, ok, err := preflight.FailureOf(txLedger{ctx: ctx, tx: tx}, d.adapter.ID, cause, code, g.Now().UTC(), g.Factory(d.adapter.ID))
		if err != nil || !ok {
			return err
		}
		_, err = tx.Append(a.Stream, int64(tx.StreamVersion(a.Stream)), a.Events...)
		return err
	})
	return run, nil
}

// deliveryStore is preflight.Store over the ledger, with the delivery's
// run riding each transaction.
type deliveryStore struct {
	ctx context.Context
	st  *bolt.Store
	run *Run
}

func (s deliveryStore) Update(ctx context.Context, fn func(preflight.Tx) error) error {
	return s.st.Update(ctx, func(tx *bolt.Tx) error {
		return fn(deliveryTx{txLedger: txLedger{ctx: s.ctx, tx: tx}, run: s.run})
	})
}

// MayBeVisible: a commit whose outcome is unknown may be visible (its meta
// page reached the ledger), so its receipt file stays with it.
func (deliveryStore) MayBeVisible(err error) bool {
	var ce *bolt.CommitError
	return errors.As(err, &ce) && ce.Visible
}

// deliveryTx is preflight.Tx over a write transaction.
type deliveryTx struct {
	txLedger
	run *Run
}

func (t deliveryTx) Program() (*events.ProgramIdentity, error) { return txProgram(t.tx) }

func (t deliveryTx) Append(stream string, evs []events.Envelope) error {
	_, err := t.tx.Append(stream, int64(t.tx.StreamVersion(stream)), evs...)
	return err
}

func (t deliveryTx) Retained(harness, workerFP string) (func(string) bool, bool, error) {
	if projections.Adopted(t.tx.Projection(projections.ManifestName)) {
		return nil, false, nil
	}
	rkv := t.tx.Projection(projections.ReceiptsName)
	// The worker's retained ids in one scan. A file outside them stays
	// only if it is another writer's (found at adoption): a file of ours
	// in this directory is this worker's (both are the agent profile's).
	mine, err := projections.WorkerReceiptIDs(rkv, harness, workerFP)
	if err != nil {
		return nil, false, err
	}
	return func(id string) bool { return mine[id] || projections.Foreign(rkv, id) }, true, nil
}

func (t deliveryTx) StartRun() error       { return t.run.StartIn(t.tx) }
func (t deliveryTx) SetStage(stage string) { t.run.SetStage(stage) }
func (t deliveryTx) FinishRun(rc receipt.Receipt) error {
	t.run.SetRecall(rc.QueryClass, rc.ResultCount)
	t.run.SetReceipt(rc.ReceiptID)
	return t.run.FinishIn(t.tx, nil)
}

// deliveryError is a transaction that failed after the preflight's output
// was written in full (the commit): the host holds the output, and the
// non-zero exit says it is void (docs/preflight.md says which clients
// discard it).
type deliveryError struct{ err error }

func (e *deliveryError) Error() string {
	if indeterminate(e.err) {
		// The receipt may be visible: the file stays, status decides.
		return "record the receipt after the output was written: " + e.err.Error() + " (non-zero exit; `tree-ring integrations status` shows whether the receipt stands)"
	}
	return "record the receipt after the output was written: " + e.err.Error() + "; the output is void (non-zero exit)"
}
func (e *deliveryError) Unwrap() error { return e.err }

// txProgram is the recorded program (nil: none recorded).
func txProgram(tx *bolt.Tx) (*events.ProgramIdentity, error) {
	p, ok, err := projections.ProgramOf(tx.Projection(projections.ManifestName))
	if !ok || err != nil {
		return nil, err
	}
	r := p.ProgramIdentity
	return &r, nil
}

// txLedger is preflight.Ledger over a write transaction's projections.
type txLedger struct {
	ctx context.Context
	tx  *bolt.Tx
}

func (l txLedger) ManifestStore() (string, string, bool, error) {
	m, ok, err := projections.ManifestStoreOf(l.tx.Projection(projections.ManifestName))
	return m.StoreID, m.ProjectRootFingerprint, ok, err
}

func (l txLedger) ManifestRecord(harness string) (events.BridgeRecord, bool, error) {
	return projections.ManifestRecordOf(l.tx.Projection(projections.ManifestName), harness)
}

func (l txLedger) StateAt(harness string, now time.Time) (fsm.State, error) {
	return projections.StateAt(l.tx.Projection(projections.HarnessesName), l.tx.Projection(projections.ReceiptsName), harness, now)
}

func (l txLedger) Recall(q preflight.RecallQuery, now time.Time) (preflight.Recall, error) {
	c, err := recall.Brief(l.ctx, l.tx.Projection(recall.Name), l.tx, recall.BriefQuery{
		Scope: recall.Scope{Project: q.Project, ProjectAlias: q.ProjectAlias, AgentProfile: q.AgentProfile,
			WorkflowID: q.WorkflowID, SessionID: q.SessionID},
		TaskHint: q.TaskHint,
	}, now)
	r := preflight.Recall{Text: c.Text, QueryClass: c.QueryClass, ResultCount: c.ResultCount, SelectedMemoryIDsSHA256: c.SelectedMemoryIDsSHA256}
	if hint, class := recall.SafeQuery(q.TaskHint); class == recall.QueryClassTaskHint {
		r.Hint = hint
	}
	return r, err
}

func (l txLedger) RecordedBy(cutoff string) ([]receipt.Entry, error) {
	return projections.ReceiptsRecordedBy(l.tx.Projection(projections.ReceiptsName), cutoff)
}

func (l txLedger) WorkerReceipts(harness, worker string) int {
	return projections.WorkerReceiptCount(l.tx.Projection(projections.ReceiptsName), harness, worker)
}

func (l txLedger) OldestWorkerReceipts(harness, worker string, n int) ([]receipt.Entry, error) {
	return projections.OldestWorkerReceipts(l.tx.Projection(projections.ReceiptsName), harness, worker, n)
}

// loadContract opens the project root and verifies harness a's activation
// contract there: the manifest exists and preflight.Check passes. The
// caller closes root.
func loadContract(loc storeLoc, a *adapters.Adapter) (root *adapters.ProjectRoot, m adapters.Manifest, checked preflight.Checked, err error) {
	root, err = adapters.OpenProjectRoot(loc.project)
	if err != nil {
		return nil, m, checked, fmt.Errorf("project root: %w", unwrapPath(err))
	}
	m, _, exists, err := adapters.LoadManifest(root)
	if err == nil && !exists {
		err = fmt.Errorf("no activation manifest at %s; run `tree-ring init` first", adapters.ManifestPath)
	}
	if err == nil {
		checked, err = preflight.Check(root, m, a, adapters.ProjectRootFingerprint(loc.project))
	}
	if err != nil {
		root.Close()
		return nil, m, checked, err
	}
	return root, m, checked, nil
}
