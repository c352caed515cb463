package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
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
	fs.StringVar(&o.Harness, "harness", "", "harness id (codex, claude-code, pi, agent-zero)")
	fs.BoolVar(&o.InputJSONStdin, "input-json-stdin", false, "read the adapter's identity object from stdin (claude-code, pi, agent-zero)")
	fs.StringVar(&o.ContextFormat, "context-format", preflight.FormatJSON, "output shape: claude-session-start, pi-before-agent-start or json")
	fs.StringVar(&o.AgentProfile, "agent-profile", "", "direct mode (codex, json): the worker's agent profile")
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
	if !slices.Contains(preflight.Formats, o.ContextFormat) {
		return usagef("--context-format %q: want one of %s", o.ContextFormat, strings.Join(preflight.Formats, ", "))
	}
	direct := o.AgentProfile != "" || o.WorkflowID != "" || o.SessionID != "" || o.CanonicalProjectRoot != ""
	if o.InputJSONStdin && direct {
		return usagef("--agent-profile, --workflow-id, --session-id and --canonical-project-root are direct-mode flags; they cannot be combined with --input-json-stdin")
	}
	if err := preflight.CheckContract(a.ID, o.InputJSONStdin, o.ContextFormat); err != nil {
		return err
	}
	loc, absent, err := locateStore(g)
	if err != nil {
		return err
	}
	if absent {
		return fmt.Errorf("no Tree Ring store at --root; run `tree-ring init` first")
	}
	var req preflight.Request
	if o.InputJSONStdin {
		data, err := readBounded(g.Stdin, adapters.MaxStdinBytes, "adapter preflight stdin exceeds 1 MiB")
		if err != nil {
			return err
		}
		if req, err = preflight.ParseAdapter(a.ID, data); err != nil {
			return err
		}
		if req.Cwd != "" {
			if err := checkCwd(req.Cwd, loc.project); err != nil {
				return err
			}
		}
	} else if req, err = preflight.DirectRequest(o.AgentProfile, o.WorkflowID, o.SessionID); err != nil {
		return err
	}
	job := delivery{adapter: a, identity: req.Identity, taskHint: req.TaskHint, runCmd: events.RunCmdIntegrationsPreflight}
	if job.scope, err = SessionScope(a.ID, req.Identity.SessionID); err != nil {
		return err
	}
	if o.CanonicalProjectRoot != "" {
		if err := checkIsolated(loc, o.CanonicalProjectRoot); err != nil {
			return err
		}
		job.isolated = true
	}
	if a.ID == "agent-zero" {
		d, err := preflight.LoadDescriptor(g.Getenv(preflight.DescriptorEnv), loc.project)
		if err != nil {
			return err
		}
		job.plugin = &d
	}
	out, err := deliver(ctx, g, loc, job)
	if err != nil {
		return err
	}
	if o.ContextFormat == preflight.FormatClaudeSessionStart {
		_, err = g.Stdout.Write(preflight.HookOutput(preflight.SessionStart, out.context))
		return err
	}
	_, err = g.Stdout.Write(preflight.JSONOutput(out.context, out.receipt.State, out.receipt.Summary()))
	return err
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

// checkCwd requires the host's working directory to resolve inside the
// project (relative values resolve against this process's directory). The
// path is never echoed.
func checkCwd(cwd, project string) error {
	abs, err := filepath.Abs(cwd)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return errors.New("cwd does not resolve to an existing directory")
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

// delivered is what the caller prints.
type delivered struct {
	context string
	receipt preflight.Receipt
}

// hookLockTimeout is how long a preflight waits for the ledger lock when
// --lock-timeout is not given: hosts bound the hook to ten seconds,
// and concurrent session starts queue on the lock.
const hookLockTimeout = 8 * time.Second

// deliver runs a preflight and records it: verify the activation contract
// on disk, then, holding the ledger's exclusive lock for the whole of it,
// in ONE write transaction: check the manifest against the ledger, take the
// harness's state at now (the recorded state with the 30-day expiry),
// require eligibility, render the scoped recall, decide the transition with
// fsm.Decide, append preflight.succeeded and receipt.recorded (and
// plugin.descriptor_found for Agent Zero's first proof, and receipt.pruned
// for what retention drops), and write the receipt file create-only. The
// file is written inside the transaction, before its commit: if the write
// fails nothing is committed; if the commit fails the file is removed
// (and a file left by a crash between the two has no index entry, proves
// nothing, and is removed by the next write in its directory). Files of
// pruned receipts are removed after the commit. Only then does the caller
// print: a failure at any step prints nothing and leaves no receipt.
func deliver(ctx context.Context, g *Globals, loc storeLoc, d delivery) (_ delivered, err error) {
	start := g.Now()
	a := d.adapter
	root, err := adapters.OpenProjectRoot(loc.project)
	if err != nil {
		return delivered{}, fmt.Errorf("project root: %w", unwrapPath(err))
	}
	defer root.Close()
	m, _, exists, err := adapters.LoadManifest(root)
	switch {
	case err != nil:
		return delivered{}, err
	case !exists:
		return delivered{}, fmt.Errorf("no activation manifest at %s; run `tree-ring init` first", adapters.ManifestPath)
	}
	checked, err := preflight.Check(root, m, a, adapters.ProjectRootFingerprint(loc.project))
	if err != nil {
		return delivered{}, err
	}
	if a.ID == "agent-zero" && (d.plugin == nil || !preflight.PassiveBinding(checked.Record)) {
		return delivered{}, preflight.ErrNotPassive
	}
	if _, err := os.Lstat(filepath.Join(loc.store, bolt.LedgerFile)); err != nil {
		return delivered{}, fmt.Errorf("no Tree Ring ledger under --root; run `tree-ring init` first")
	}
	if !g.lockTimeoutSet {
		g.LockTimeout = hookLockTimeout
	}
	st, err := g.OpenStore(false)
	if err != nil {
		return delivered{}, pathless(err)
	}
	defer st.Close()
	// The run: run.started is the hook path's one extra commit; its
	// outcome rides the receipt transaction below (FinishIn), or End
	// records a failure on the way out.
	sha, chars := InputDigest(d.input)
	if d.input == nil {
		sha, chars = "", 0
	}
	run, err := g.StartRun(ctx, st, RunSpec{Command: d.runCmd, Scope: d.scope, Harness: d.adapter.ID, Stage: "preflight", InputSHA256: sha, InputChars: chars})
	if err != nil {
		return delivered{}, err
	}
	defer run.End(ctx, &err)

	var out delivered
	var wrote bool
	var path string
	var removals []string
	worker := preflight.WorkerKeyFingerprint(a.ID, d.identity.AgentProfile)
	err = st.Update(ctx, func(tx *bolt.Tx) error {
		now := g.Now().UTC().Truncate(time.Second)
		mkv := tx.Projection(projections.ManifestName)
		lm, ok, err := projections.ManifestOf(mkv)
		if err != nil {
			return err
		}
		lr, recOK, err := projections.ManifestRecordOf(mkv, a.ID)
		if err != nil {
			return err
		}
		if !ok || lm.StoreID != m.StoreID || lm.ProjectRootFingerprint != m.ProjectRootFingerprint ||
			!recOK || !lr.Published || !adapters.RecordOf(lr.Contract).Equal(checked.Record) {
			return preflight.ErrLedgerMismatch
		}
		rkv := tx.Projection(projections.ReceiptsName)
		cur, err := projections.StateAt(tx.Projection(projections.HarnessesName), rkv, a.ID, now)
		if err != nil {
			return err
		}
		if !preflight.Eligible(a.ID, cur) {
			return preflight.ErrNotEligible
		}
		name, alias := preflight.ProjectName(loc.project)
		brief, err := recall.Brief(ctx, tx.Projection(recall.Name), tx, recall.BriefQuery{
			Scope: recall.Scope{Project: name, ProjectAlias: alias, AgentProfile: d.identity.AgentProfile,
				WorkflowID: d.identity.WorkflowID, SessionID: d.identity.SessionID},
			TaskHint: d.taskHint,
		}, now)
		if err != nil {
			return fmt.Errorf("preflight recall: %w", err)
		}

		stream := events.HarnessStream(a.ID)
		f := &events.Factory{Now: func() time.Time { return now }, NewID: g.NewID, Actor: a.ID}
		byStream := map[string][]events.Envelope{}
		add := func(stream, typ string, p any) error {
			e, err := f.New(stream, typ, p)
			if err == nil {
				byStream[stream] = append(byStream[stream], e)
			}
			return err
		}
		from := cur
		if a.ID == "agent-zero" && cur == fsm.NeedsPlugin {
			// The live descriptor is the plugin found: needs-plugin ->
			// configured-awaiting-proof, then the proof below.
			to, err := fsm.Decide(cur, fsm.FindPlugin)
			if err != nil {
				return err
			}
			if err := add(stream, events.TypePluginDescriptorFound, &events.PluginDescriptorFound{
				Transition: events.Transition{From: string(cur), To: string(to)}, HarnessID: a.ID, PluginVersion: d.plugin.PluginVersion,
			}); err != nil {
				return err
			}
			from = to
		}
		prove := fsm.Prove
		if d.isolated {
			prove = fsm.ProveIsolated
		}
		to, err := fsm.Decide(from, prove)
		if err != nil {
			return err
		}
		receiptID, err := preflight.NewReceiptID(nil)
		if err != nil {
			return err
		}
		rc := preflight.Receipt{
			SchemaVersion: preflight.ReceiptSchemaVersion, ProtocolVersion: m.ProtocolVersion, ReceiptID: receiptID,
			HarnessID: a.ID, AdapterVersion: checked.Record.AdapterVersion, BridgeFingerprint: checked.Record.BridgeFingerprint,
			StoreID: m.StoreID, ProjectRootFingerprint: m.ProjectRootFingerprint, WorkerKeyFingerprint: worker,
			Session: d.identity, State: string(to), QueryClass: brief.QueryClass, ResultCount: brief.ResultCount,
			SelectedMemoryIDsSHA256: brief.SelectedMemoryIDsSHA256,
			DurationMS:              max(0, g.Now().Sub(start).Milliseconds()),
			Status:                  preflight.StatusSuccess, RecordedAt: preflight.FormatTime(now),
		}
		body := rc.Encode()
		sum := sha256.Sum256(body)
		succeeded := &events.PreflightSucceeded{
			Transition: events.Transition{From: string(from), To: string(to)}, HarnessID: a.ID,
			WorkerKeyFingerprint: worker, ReceiptID: receiptID, QueryClass: rc.QueryClass, ResultCount: rc.ResultCount,
			SelectedMemoryIDsSHA256: rc.SelectedMemoryIDsSHA256, DurationMS: rc.DurationMS,
		}
		if hint, class := recall.SafeQuery(d.taskHint); class == recall.QueryClassTaskHint {
			// A digest and a length, never the hint (docs/preflight.md).
			hs := sha256.Sum256([]byte(hint))
			succeeded.TaskHintSHA256, succeeded.TaskHintChars = hex.EncodeToString(hs[:]), utf8.RuneCountInString(hint)
		}
		if err := add(stream, events.TypePreflightSucceeded, succeeded); err != nil {
			return err
		}
		session := events.ReceiptSession(d.identity)
		if err := add(stream, events.TypeReceiptRecorded, &events.ReceiptRecorded{
			HarnessID: a.ID, ReceiptID: receiptID, ProtocolVersion: rc.ProtocolVersion, AdapterVersion: rc.AdapterVersion,
			BridgeFingerprint: rc.BridgeFingerprint, StoreID: rc.StoreID, ProjectRootFingerprint: rc.ProjectRootFingerprint,
			WorkerKeyFingerprint: worker, State: rc.State, QueryClass: rc.QueryClass, ResultCount: rc.ResultCount,
			SelectedMemoryIDsSHA256: rc.SelectedMemoryIDsSHA256, DurationMS: rc.DurationMS, Status: rc.Status,
			SHA256: hex.EncodeToString(sum[:]), RecordedAt: rc.RecordedAt, Session: &session, Path: rc.Path(),
		}); err != nil {
			return err
		}

		// Retention, decided at this writer's clock.
		expired, err := projections.ReceiptsRecordedBy(rkv, preflight.FormatTime(now.Add(-preflight.RetentionAge)))
		if err != nil {
			return err
		}
		// Only the receipts beyond the newest 99 are read: the index
		// keeps a count per worker and its entries in age order.
		beyond, err := projections.OldestWorkerReceipts(rkv, a.ID, worker, preflight.Beyond(projections.WorkerReceiptCount(rkv, a.ID, worker)))
		if err != nil {
			return err
		}
		for _, p := range preflight.Retain(now, indexed(expired), indexed(beyond)) {
			if err := add(events.HarnessStream(p.HarnessID), events.TypeReceiptPruned, &events.ReceiptPruned{
				HarnessID: p.HarnessID, WorkerKeyFingerprint: p.Worker, ReceiptID: p.ReceiptID, Reason: p.Reason,
			}); err != nil {
				return err
			}
			if p.Path != "" {
				removals = append(removals, p.Path)
			}
		}
		streams := make([]string, 0, len(byStream))
		for s := range byStream {
			streams = append(streams, s)
		}
		slices.Sort(streams)
		for _, s := range streams {
			if _, err := tx.Append(s, int64(tx.StreamVersion(s)), byStream[s]...); err != nil {
				return fmt.Errorf("append %s: %w", s, err)
			}
		}
		run.SetRecall(brief.QueryClass, brief.ResultCount)
		run.SetReceipt(receiptID)
		if err := run.FinishIn(tx, nil); err != nil {
			return err
		}
		// Strays in this worker's directory: receipt files the index (as
		// of this transaction, prunes applied) does not hold.
		dir := preflight.WorkerDir(a.ID, d.identity.AgentProfile)
		if names, _, err := root.ListDir(dir, maxWorkerFiles); err == nil {
			for _, n := range names {
				if id, ok := strings.CutSuffix(n, ".json"); ok && preflight.ValidReceiptID(id) && !projections.Indexed(rkv, id) && id != receiptID {
					removals = append(removals, dir+"/"+n)
				}
			}
		}
		// Deliver before acknowledging: the file is created (O_EXCL,
		// O_NOFOLLOW, fsync, directory fsync) before the commit.
		path = rc.Path()
		if err := root.CreateFile(path, body, preflight.FilePerm, preflight.DirPerm); err != nil {
			var de *adapters.DurabilityError
			wrote = errors.As(err, &de)
			return fmt.Errorf("write the receipt: %w", err)
		}
		wrote = true
		out = delivered{context: brief.Text, receipt: rc}
		return nil
	})
	if err != nil {
		if wrote {
			// Nothing was committed: the file must not outlive it.
			_, _ = root.RemoveFile(path)
		}
		return delivered{}, pathless(err)
	}
	// Retention on disk (the lock is still held): files of pruned receipts
	// and strays. Best effort: a file left behind has no index entry, never
	// proves anything, and the next write in its directory removes it.
	for _, p := range removals {
		_, _ = root.RemoveFile(p)
	}
	return out, nil
}

func indexed(es []projections.ReceiptEntry) []preflight.Indexed {
	out := make([]preflight.Indexed, len(es))
	for i, e := range es {
		out[i] = preflight.Indexed{HarnessID: e.HarnessID, Worker: e.Worker, ReceiptID: e.ReceiptID, RecordedAt: e.RecordedAt, Path: e.Path}
	}
	return out
}

// maxWorkerFiles bounds a receipt directory listing (a directory filled
// beyond it by someone else is left alone).
const maxWorkerFiles = 4096

// pathless drops absolute paths from the ledger's errors, which a hook
// prints on stderr.
func pathless(err error) error {
	var le *bolt.LockedError
	var nf *bolt.NotFoundError
	var ir *bolt.InvalidRootError
	var ce *bolt.CorruptError
	switch {
	case errors.As(err, &le):
		return fmt.Errorf("the ledger is locked by another process (waited %s)", le.Timeout)
	case errors.As(err, &nf):
		return errors.New("no Tree Ring ledger under --root; run `tree-ring init` first")
	case errors.As(err, &ir):
		return fmt.Errorf("the ledger: %s", ir.Reason)
	case errors.As(err, &ce):
		return fmt.Errorf("the ledger is corrupt (run `tree-ring audit verify`): %v", unwrapPath(ce.Err))
	case errors.Is(err, syscall.ENOSPC):
		return errors.New("no space left on device")
	}
	return err
}
