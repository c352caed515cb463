package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/activation"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
	"github.com/tree-ring/tree-ring/projections"
)

type activateOptions struct {
	Harness string
	DryRun  bool
	Accept  bool
	link    bool // invoked as `integrations link`, for the run record
}

func (o *activateOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Harness, "harness", "", "harness id (one of: "+strings.Join(adapters.IDs(), ", ")+")")
	fs.BoolVar(&o.DryRun, "dry-run", false, "report the plan; create nothing, not even the store")
	fs.BoolVar(&o.Accept, "accept-managed-block", false, "adopt a Tree Ring block you added by hand to an instruction file Tree Ring did not create (AGENTS.md)")
}

func init() {
	register("integrations activate", "", "publish one harness's bridge create-only and record it", runActivate)
	register("integrations link", "", "alias of `integrations activate`", func(ctx context.Context, g *Globals, o *activateOptions, args []string) error {
		o.link = true
		return runActivate(ctx, g, o, args)
	})
}

func runActivate(ctx context.Context, g *Globals, o *activateOptions, args []string) error {
	if len(args) > 0 {
		return usagef("integrations activate takes no arguments")
	}
	a, err := harnessFlag(o.Harness)
	if err != nil {
		return err
	}
	if !a.Publishes() {
		// Refused before anything is opened: a guidance-only harness has no
		// bridge, so there is nothing to publish or record.
		return fmt.Errorf("%s is guidance-only: Tree Ring publishes no bridge for it and it never becomes active; nothing was written. %s", a.ID, a.NativeGap)
	}
	pr, err := resolveProject(g)
	if err != nil {
		return err
	}
	defer pr.root.Close()
	dets := detectionsByID(adapters.Detect(pr.canonical, g.Getenv("HOME")))
	runCmd := events.RunCmdIntegrationsActivate
	if o.link {
		runCmd = events.RunCmdIntegrationsLink
	}
	plan, err := pr.plan(ctx, g, o.DryRun, activation.Input{
		Command: activation.Activate, Targets: []string{a.ID}, Detections: dets, Accept: o.Accept,
	}, runCmd)
	if err != nil {
		return err
	}
	if err := printReport(g, plan.Outcomes[0], o.DryRun); err != nil {
		return err
	}
	return activation.NeedsReview(plan.Outcomes)
}

// harnessFlag resolves --harness to a registered adapter.
func harnessFlag(id string) (*adapters.Adapter, error) {
	if id == "" {
		return nil, usagef("--harness is required (one of: %s)", strings.Join(adapters.IDs(), ", "))
	}
	a, ok := adapters.Lookup(id)
	if !ok {
		return nil, usagef("--harness %q is not a registered adapter (one of: %s)", id, strings.Join(adapters.IDs(), ", "))
	}
	return a, nil
}

// harnessIDs lists the registered harnesses that have a capability, sorted.
func harnessIDs(has func(*adapters.Adapter) bool) []string {
	var out []string
	for _, a := range adapters.All() {
		if has(a) {
			out = append(out, a.ID)
		}
	}
	return out
}

// answersHooks is the capability of `integrations hook`.
func answersHooks(a *adapters.Adapter) bool { return len(a.HookEvents()) > 0 }

// project is the resolved project of an integrations command. Absolute paths
// stay in memory: they never enter events, output or errors.
type project struct {
	canonical   string
	fingerprint string
	storeRoot   string // absolute, lexical
	root        *adapters.ProjectRoot
}

// resolveProject resolves --source-root and checks that --root names this
// project's store: a directory named .tree-ring directly under the project
// root. ".tree-ring", "./.tree-ring", ".tree-ring/" and the absolute path are
// the same store; another directory is a different store and is refused, as
// is a symlinked or non-directory store root.
func resolveProject(g *Globals) (*project, error) {
	canonical, err := adapters.CanonicalProjectRoot(g.SourceRoot)
	if err != nil {
		return nil, fmt.Errorf("--source-root %s: %w", g.SourceRoot, unwrapPath(err))
	}
	abs, err := filepath.Abs(g.Root)
	if err != nil {
		return nil, fmt.Errorf("--root %s: %w", g.Root, err)
	}
	if filepath.Base(abs) != adapters.StoreDir {
		return nil, fmt.Errorf("--root %s: the store must be the project's %s directory", g.Root, adapters.StoreDir)
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil || parent != canonical {
		return nil, fmt.Errorf("--root %s is not this project's store (%s under --source-root); a different store is refused", g.Root, adapters.StoreDir)
	}
	switch fi, err := os.Lstat(abs); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("--root %s: %w", g.Root, unwrapPath(err))
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("--root %s is a symlink; Tree Ring refuses to follow it", g.Root)
	case !fi.IsDir():
		return nil, fmt.Errorf("--root %s is not a directory", g.Root)
	}
	open := adapters.OpenProjectRoot
	if g.seams.OpenProjectRoot != nil {
		open = g.seams.OpenProjectRoot
	}
	root, err := open(canonical)
	if err != nil {
		return nil, fmt.Errorf("--source-root %s: %w", g.SourceRoot, unwrapPath(err))
	}
	return &project{canonical: canonical, fingerprint: adapters.ProjectRootFingerprint(canonical), storeRoot: abs, root: root}, nil
}

func (pr *project) hasLedger() (bool, error) {
	_, err := os.Lstat(filepath.Join(pr.storeRoot, bolt.LedgerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func detectionsByID(ds []adapters.Detection) map[string]adapters.Detection {
	m := map[string]adapters.Detection{}
	for _, d := range ds {
		m[d.Adapter.ID] = d
	}
	return m
}

// plan builds (and unless dryRun applies and records) a plan. It plans on
// a read-only snapshot first, so that a run with nothing to publish or
// record never opens the ledger for writing and leaves every byte, the
// ledger file's included, as it was. Otherwise it re-plans holding the
// store's exclusive lock until the events are appended. A dry run creates
// nothing; without a store it plans against an empty ledger. A real run
// needs the store initialized (init does that first).
//
// A run is recorded (runCmd, docs/runs.md) only for the write phase: a
// command that finds nothing to do changes no state and appends nothing.
func (pr *project) plan(ctx context.Context, g *Globals, dryRun bool, in activation.Input, runCmd string) (_ *activation.Plan, err error) {
	exists, err := pr.hasLedger()
	if err != nil {
		return nil, fmt.Errorf("--root %s: %w", g.Root, unwrapPath(err))
	}
	if !exists && !dryRun {
		return nil, g.noLedger(fmt.Errorf("no Tree Ring store at %s; run `tree-ring init` first", g.Root))
	}
	if !exists {
		plan, _, err := pr.build(g, nil, in)
		return plan, err
	}
	ro, err := g.OpenStore(true)
	if err != nil {
		return nil, err
	}
	plan, _, err := pr.build(g, ro, in)
	ro.Close()
	if err != nil || dryRun || !plan.HasWork() {
		return plan, err
	}
	st, err := g.OpenStore(false)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	scope, err := g.CLIScope()
	if err != nil {
		return nil, err
	}
	run, err := g.StartRun(ctx, st, RunSpec{Command: runCmd, Scope: scope})
	if err != nil {
		return nil, err
	}
	defer run.End(ctx, &err)
	plan, snap, err := pr.build(g, st, in)
	if err != nil {
		return nil, err
	}
	run.SetStage("publish")
	applyErr := plan.Apply()
	if err := appendPending(ctx, g, st, snap, plan.Events(), func(tx *bolt.Tx) error { return run.FinishIn(tx, applyErr) }); err != nil {
		return nil, err
	}
	return plan, applyErr
}

// build snapshots st (nil: no store), looks for a program no bridge may
// run (programFinding) and guidance no bridge may point at (guidanceCheck)
// and builds the plan.
func (pr *project) build(g *Globals, st *bolt.Store, in activation.Input) (*activation.Plan, *snapshot, error) {
	snap := newSnapshot()
	if st != nil {
		if err := snap.read(st); err != nil {
			return nil, nil, err
		}
	}
	var err error
	if in.ForeignProgram, err = pr.programFinding(g, st); err != nil {
		return nil, nil, err
	}
	if _, in.ForeignGuidance, _, err = pr.guidanceCheck(context.Background(), st); err != nil {
		return nil, nil, err
	}
	in.Root, in.CLIVersion = pr.root, Version()
	in.Ledger = snap.ledger
	in.Context = adapters.Context{StoreID: snap.storeID, ProjectRootFingerprint: pr.fingerprint}
	plan, err := activation.Build(in)
	return plan, snap, err
}

// checkStore refuses, before init writes anything, a store that names
// another project root: a moved or copied project, which only reconcile
// records (activation.Build refuses it for every other plan).
func (pr *project) checkStore(s *snapshot) error {
	if activation.RootMoved(s.ledger, pr.fingerprint) {
		return &activation.RootMovedError{}
	}
	return nil
}

// snapshot is what a plan reads of the ledger, and the stream versions its
// appends expect.
type snapshot struct {
	ledger   activation.Ledger
	versions map[string]uint64
	storeID  string
}

func newSnapshot() *snapshot { return &snapshot{versions: map[string]uint64{}} }

func (s *snapshot) read(st *bolt.Store) error {
	return st.View(func(r *bolt.Reader) error {
		s.versions[events.StoreStream] = r.StreamVersion(events.StoreStream)
		for _, a := range adapters.All() {
			s.versions[events.HarnessStream(a.ID)] = r.StreamVersion(events.HarnessStream(a.ID))
		}
		var err error
		if s.ledger, err = ledgerOf(r.Projection(projections.HarnessesName), r.Projection(projections.ManifestName)); err != nil {
			return err
		}
		if s.ledger.Initialized {
			s.storeID = s.ledger.StoreID
		}
		return nil
	})
}

// ledgerOf reads what an activation plan needs from the harnesses (hkv) and
// manifest (mkv) projections.
func ledgerOf(hkv, mkv projections.KV) (activation.Ledger, error) {
	var l activation.Ledger
	m, ok, err := projections.ManifestOf(mkv)
	if err != nil {
		return l, err
	}
	l.Initialized, l.StoreID, l.ProjectRootFingerprint, l.Records = ok, m.StoreID, m.ProjectRootFingerprint, m.Records
	if last, ok, err := projections.LastPublished(mkv); err != nil {
		return l, err
	} else if ok {
		l.LastPublished = last.SHA256
	}
	ids, err := projections.HarnessIDs(hkv)
	if err != nil {
		return l, err
	}
	l.Harnesses = make(map[string]activation.Harness, len(ids))
	for _, id := range ids {
		h, _, err := projections.HarnessState(hkv, id)
		if err != nil {
			return l, err
		}
		l.Harnesses[id] = activation.Harness{State: fsm.State(h.State), Markers: h.Markers, Reason: h.Reason, Paths: h.Paths}
	}
	return l, nil
}

// appendPending appends a plan's events in one transaction, each stream at
// the version the snapshot saw (the store's file lock is held throughout, so
// a mismatch means a bug, not a race).
// finish, when not nil, runs last inside the same transaction (the run
// record's run.finished).
func appendPending(ctx context.Context, g *Globals, st *bolt.Store, snap *snapshot, pend []activation.Pending, finish func(*bolt.Tx) error) error {
	if len(pend) == 0 {
		return nil
	}
	f := g.Factory("cli")
	var order []string
	byStream := map[string][]events.Envelope{}
	for _, p := range pend {
		e, err := f.New(p.Stream, p.Type, p.Payload)
		if err != nil {
			return err
		}
		if _, seen := byStream[p.Stream]; !seen {
			order = append(order, p.Stream)
		}
		byStream[p.Stream] = append(byStream[p.Stream], e)
	}
	return st.Update(ctx, func(tx *bolt.Tx) error {
		for _, s := range order {
			if _, err := tx.Append(s, int64(snap.versions[s]), byStream[s]...); err != nil {
				return fmt.Errorf("append %s: %w", s, err)
			}
		}
		if finish != nil {
			return finish(tx)
		}
		return nil
	})
}

// report is the activate/link/deactivate JSON shape.
type report struct {
	HarnessID    string   `json:"harness_id"`
	State        string   `json:"state"`
	ChangedPaths []string `json:"changed_paths"`
	DryRun       bool     `json:"dry_run"`
	NextStep     string   `json:"next_step"`
}

func reportOf(o *activation.Outcome, dryRun bool) report {
	r := report{HarnessID: o.Adapter.ID, State: string(o.State), ChangedPaths: o.ChangedPaths, DryRun: dryRun, NextStep: o.NextStep}
	if r.ChangedPaths == nil {
		r.ChangedPaths = []string{}
	}
	if dryRun && len(r.ChangedPaths) > 0 && o.Kind == activation.Publish {
		r.NextStep = activation.NextPlan
	}
	return r
}

func printReport(g *Globals, o *activation.Outcome, dryRun bool) error {
	r := reportOf(o, dryRun)
	if g.JSON {
		return writeJSON(g.Stdout, r)
	}
	suffix := ""
	if dryRun {
		suffix = " (dry-run)"
	}
	fmt.Fprintf(g.Stdout, "%s: %s%s\n", r.HarnessID, r.State, suffix)
	if dryRun && len(r.ChangedPaths) > 0 {
		fmt.Fprintf(g.Stdout, "  creates: %s\n", strings.Join(r.ChangedPaths, ", "))
	}
	printNext(g.Stdout, r.NextStep)
	return nil
}

// printNext prints "  next: " and the step; continuation lines (a snippet to
// paste) are printed verbatim so that they stay exact.
func printNext(w io.Writer, step string) {
	if step == "" {
		return
	}
	fmt.Fprintf(w, "  next: %s\n", step)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
