package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/activation"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/fsm"
	"github.com/tree-ring/tree-ring/projections"
)

type statusOptions struct{ Verbose bool }

func (o *statusOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Verbose, "verbose", false, "also show managed paths and the newest valid receipt (--json implies it)")
}

func init() {
	register("integrations status", "", "each harness's state: the ledger's FSM state plus live checks of the bridge and receipts (read-only)", runStatus)
}

// statusEntry is one harness in the status report (the protocol's
// IntegrationStatusEntry). The optional fields appear only when verbose;
// the last_recall fields only with a valid receipt, and a zero count is 0.
type statusEntry struct {
	ID                    string   `json:"id"`
	Name                  string   `json:"name"`
	State                 string   `json:"state"`
	Capability            string   `json:"capability"`
	ManagedPaths          []string `json:"managed_paths,omitempty"`
	ReceiptAgeSeconds     *int64   `json:"receipt_age_seconds,omitempty"`
	LastRecallResultCount *int     `json:"last_recall_result_count,omitempty"`
	LastRecallQueryClass  string   `json:"last_recall_query_class,omitempty"`
	// Diagnostic is a failed harness's diagnostic code (a failed
	// preflight's, or what status found live).
	Diagnostic string `json:"diagnostic,omitempty"`
	NextStep   string `json:"next_step"`
}

type statusReport struct {
	StoreID string `json:"store_id,omitempty"`
	// Descriptor-scoped status (the Agent Zero plugin's call, with its
	// descriptor variable set) repeats Agent Zero's entry here, where the
	// plugin's dashboard reads it; absent otherwise
	// (docs/adapters/agent-zero.md).
	State             string        `json:"state,omitempty"`
	NextStep          string        `json:"next_step,omitempty"`
	ReceiptAgeSeconds *int64        `json:"receipt_age_seconds,omitempty"`
	Integrations      []statusEntry `json:"integrations"`
	// ReceiptFiles is where the receipt index and the files disagree;
	// absent when they agree.
	ReceiptFiles *receiptDrift `json:"receipt_files,omitempty"`
}

func runStatus(ctx context.Context, g *Globals, o *statusOptions, args []string) error {
	if len(args) > 0 {
		return usagef("integrations status takes no arguments")
	}
	if rep, ok := unmountedStatus(g); ok {
		if g.JSON {
			return writeJSON(g.Stdout, rep)
		}
		printStatus(g.Stdout, rep)
		return nil
	}
	pr, err := resolveProject(g)
	if err != nil {
		return err
	}
	defer pr.root.Close()
	ev, err := evaluate(ctx, g, pr, g.Now())
	if err != nil {
		return err
	}
	if err := ev.noStore(g); err != nil {
		return err
	}
	rep := ev.report(o.Verbose || g.JSON, g.Getenv(preflight.DescriptorEnv) != "")
	if ev.ledger {
		if rep.ReceiptFiles, err = ledgerDrift(g, pr); err != nil {
			return err
		}
	}
	if g.JSON {
		return writeJSON(g.Stdout, rep)
	}
	printStatus(g.Stdout, rep)
	if rep.ReceiptFiles != nil {
		fmt.Fprintf(g.Stdout, "receipt files: %s\n", rep.ReceiptFiles)
	}
	return nil
}

// noStore is status's refusal in a project with no ledger whose
// activation.json init will not adopt as it is: another root's or
// undecodable (activation.UnadoptableError), or missing or invalid under
// a root whose manifest named a store (a deleted ledger: say the repair).
func (ev *evaluation) noStore(g *Globals) error {
	switch {
	case ev.ledger:
		return nil
	case ev.manifest == activation.ManifestMismatch || ev.manifest == activation.ManifestInvalid:
		return &activation.UnadoptableError{Condition: ev.manifest}
	case g.manifestNamesStore() && ev.manifest != activation.ManifestPresent:
		return g.noLedger(nil)
	}
	return nil
}

// report is the status report of the evaluation; with a plugin
// descriptor in the environment, the plugin-proven harness's state is at
// the top level too.
func (ev *evaluation) report(verbose, descriptor bool) statusReport {
	rep := statusReport{StoreID: ev.storeID, Integrations: []statusEntry{}}
	for _, h := range ev.harnesses {
		e := h.entry(verbose)
		rep.Integrations = append(rep.Integrations, e)
		if h.adapter.PluginDescriptor && descriptor {
			rep.State, rep.NextStep, rep.ReceiptAgeSeconds = e.State, e.NextStep, e.ReceiptAgeSeconds
		}
	}
	return rep
}

// ledgerDrift is where the receipt index and the files disagree (nil:
// nowhere).
func ledgerDrift(g *Globals, pr *project) (*receiptDrift, error) {
	st, err := g.OpenStore(true)
	if err != nil {
		return nil, err
	}
	drift, err := checkReceiptFiles(st, pr.root)
	st.Close()
	if err != nil {
		return nil, fmt.Errorf("receipt files: %w", err)
	}
	return driftOrNil(drift), nil
}

// unmountedStatus is the report of a descriptor-scoped status (the Agent
// Zero plugin's call) whose bound project root, the parent of --root, does
// not exist in this runtime: the plugin-proven harness is
// needs-project-mount (activation.Unreachable), at the top level too.
func unmountedStatus(g *Globals) (statusReport, bool) {
	env := g.Getenv(preflight.DescriptorEnv)
	if env == "" {
		return statusReport{}, false
	}
	project, ok := unreachableProject(g)
	if !ok {
		return statusReport{}, false
	}
	rep := statusReport{Integrations: []statusEntry{}}
	for _, a := range adapters.All() {
		if !a.PluginDescriptor {
			continue
		}
		_, err := preflight.LoadDescriptor(env, project)
		h := &harnessEval{adapter: a, Status: activation.Unreachable(a, err)}
		e := h.entry(false)
		rep.Integrations = append(rep.Integrations, e)
		rep.State, rep.NextStep = e.State, e.NextStep
	}
	return rep, true
}

// unreachableProject reports whether the project --root names (its
// parent directory) does not exist at all, and returns its absolute path.
func unreachableProject(g *Globals) (string, bool) {
	abs, err := filepath.Abs(g.Root)
	if err != nil || filepath.Base(abs) != adapters.StoreDir {
		return "", false
	}
	project := filepath.Dir(abs)
	_, err = os.Lstat(project)
	return project, errors.Is(err, fs.ErrNotExist)
}

func printStatus(w io.Writer, rep statusReport) {
	for _, e := range rep.Integrations {
		fmt.Fprintf(w, "%s: %s\n", e.Name, e.State)
		if e.ReceiptAgeSeconds != nil {
			fmt.Fprintf(w, "  receipt-age-seconds: %d\n", *e.ReceiptAgeSeconds)
		}
		if e.LastRecallResultCount != nil {
			fmt.Fprintf(w, "  last-recall-results: %d\n", *e.LastRecallResultCount)
		}
		if e.LastRecallQueryClass != "" {
			fmt.Fprintf(w, "  last-recall-query: %s\n", e.LastRecallQueryClass)
		}
		if len(e.ManagedPaths) > 0 {
			fmt.Fprintf(w, "  managed: %s\n", strings.Join(e.ManagedPaths, ", "))
		}
		if e.Diagnostic != "" {
			fmt.Fprintf(w, "  diagnostic: %s\n", e.Diagnostic)
		}
		printNext(w, e.NextStep)
	}
}

// evaluation is the read-only assessment status and certify share.
type evaluation struct {
	storeID   string
	ledger    bool   // a ledger exists
	manifest  string // activation.Manifest*
	harnesses []*harnessEval
}

// harnessEval is one harness's state with its evidence.
type harnessEval struct {
	adapter *adapters.Adapter
	markers []string
	activation.Evidence
	activation.Status
}

func (h *harnessEval) entry(verbose bool) statusEntry {
	e := statusEntry{ID: h.adapter.ID, Name: h.adapter.Name, State: string(h.State), Capability: string(h.adapter.Capability),
		Diagnostic: h.Status.Diagnostic, NextStep: h.Next}
	if !verbose {
		return e
	}
	if h.Record != nil && h.State != fsm.Unsupported {
		e.ManagedPaths = h.Record.Paths()
	}
	if h.Receipt != nil {
		age, n := h.Age, h.Receipt.ResultCount
		e.ReceiptAgeSeconds, e.LastRecallResultCount, e.LastRecallQueryClass = &age, &n, h.Receipt.QueryClass
	}
	return e
}

// ledgerView is what status reads from the ledger, in one read
// transaction.
type ledgerView struct {
	storeID, projectFP string
	versions           map[string]uint64
	records            map[string]events.BridgeRecord
	receipts           map[string][]receipt.Entry
	proofs             map[string]projections.ReceiptProof
	states             map[string]fsm.State
	notProof           map[string]bool         // fsm.History.NotProofHere
	diagnostics        map[string]string       // failed harnesses' codes, reviews' reasons
	program            *events.ProgramIdentity // nil: none recorded
	guidance           []events.FileDigest     // the last guidance.recorded
	published          bool                    // a manifest.published
}

// evaluate assesses every harness activation.Listed names at instant now
// with the status rule (activation.Assess). It never writes: the ledger is
// opened read-only (and not at all when there is none), files are only
// read.
func evaluate(ctx context.Context, g *Globals, pr *project, now time.Time) (*evaluation, error) {
	ev := &evaluation{}
	dets := detectionsByID(adapters.Detect(pr.canonical, g.Getenv("HOME")))
	m, cond, err := manifestCondition(pr)
	if err != nil {
		return nil, err
	}
	ev.manifest = cond
	ledger, err := pr.hasLedger()
	if err != nil {
		return nil, fmt.Errorf("--root %s: %w", g.Root, unwrapPath(err))
	}
	ev.ledger = ledger
	lv := &ledgerView{}
	prog := &programCheck{g: g, pr: pr}
	guide := &guidanceCheck{pr: pr}
	if ledger {
		if lv, err = readLedgerView(ctx, g, now); err != nil {
			return nil, err
		}
		ev.storeID = lv.storeID
		prog.rec, guide.rec = lv.program, lv.guidance
		ev.manifest = movedCondition(ev.manifest, m, lv, pr)
		if ev.manifest == activation.ManifestPresent && (m.StoreID != lv.storeID || m.ProjectRootFingerprint != lv.projectFP) {
			ev.manifest = activation.ManifestMismatch
		}
	}
	for _, a := range adapters.All() {
		d := dets[a.ID]
		h := &harnessEval{adapter: a, markers: d.MarkerPaths(), Evidence: lv.evidence(a, ledger, ev.manifest, m)}
		if !activation.Listed(d.Detected(), h.Evidence) {
			continue
		}
		ev.harnesses = append(ev.harnesses, h)
		live := &liveEvidence{g: g, pr: pr, m: m, a: a, program: prog, guidance: guide, entries: lv.receipts[a.ID], proof: lv.proofs[a.ID], now: now}
		if !ledger && ev.manifest == activation.ManifestPresent {
			// Another writer's manifest, not adopted yet (adopt.go).
			ev.storeID = m.StoreID
			h.Status = activation.AssessUnadopted(h.Evidence, live)
			continue
		}
		h.Status = activation.Assess(h.Evidence, live)
	}
	return ev, nil
}

// manifestCondition reads the activation manifest on disk: present (and
// naming this project root), missing, invalid, or naming another root.
func manifestCondition(pr *project) (adapters.Manifest, string, error) {
	m, _, exists, err := adapters.LoadManifest(pr.root)
	var mfe *adapters.ManifestError
	switch {
	case err != nil && !errors.As(err, &mfe) && !adapters.IsRootRefusal(err):
		return m, "", fmt.Errorf("read %s: %w", adapters.ManifestPath, err)
	case err != nil:
		return m, activation.ManifestInvalid, nil
	case !exists:
		return m, activation.ManifestMissing, nil
	case m.ProjectRootFingerprint != pr.fingerprint:
		return m, activation.ManifestMismatch, nil
	}
	return m, activation.ManifestPresent, nil
}

// movedCondition is the manifest's condition where the store names another
// root than this one: moved when the manifest on disk is missing or names
// the store's own root and store (the project was moved or copied here).
func movedCondition(cond string, m adapters.Manifest, lv *ledgerView, pr *project) string {
	if lv.storeID == "" || lv.projectFP == pr.fingerprint {
		return cond
	}
	if cond == activation.ManifestMissing || cond == activation.ManifestMismatch && m.StoreID == lv.storeID && m.ProjectRootFingerprint == lv.projectFP {
		return activation.ManifestMoved
	}
	return cond
}

// evidence is harness a's recorded evidence: the ledger's view of it and
// its record in the manifest on disk m (condition cond).
func (lv *ledgerView) evidence(a *adapters.Adapter, ledger bool, cond string, m adapters.Manifest) activation.Evidence {
	e := activation.Evidence{Adapter: a, Ledger: ledger, Manifest: cond, Events: lv.versions[a.ID] > 0, LedgerState: fsm.Initial, Published: lv.published}
	if s, ok := lv.states[a.ID]; ok {
		e.LedgerState, e.NotProofHere = s, lv.notProof[a.ID]
	}
	if e.LedgerState == fsm.Failed || e.LedgerState == fsm.NeedsUserReview {
		e.LedgerDiagnostic = lv.diagnostics[a.ID]
	}
	if rec, ok := m.Harnesses[a.ID]; ok && cond == activation.ManifestPresent {
		e.Record = &rec
	}
	if lr, ok := lv.records[a.ID]; ok {
		e.LedgerRecord = &lr
	}
	return e
}

// readLedgerView reads the manifest projection, the receipt index and,
// by replaying each harness stream at now (fsm.StateAt, which derives the
// 30-day expiry), the recorded states.
func readLedgerView(ctx context.Context, g *Globals, now time.Time) (*ledgerView, error) {
	lv := &ledgerView{versions: map[string]uint64{}, records: map[string]events.BridgeRecord{},
		receipts: map[string][]receipt.Entry{}, proofs: map[string]projections.ReceiptProof{}, states: map[string]fsm.State{},
		notProof: map[string]bool{}, diagnostics: map[string]string{}}
	st, err := g.OpenLongReader()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := st.View(lv.read); err != nil {
		return nil, err
	}
	if lv.guidance, err = recordedGuidance(ctx, st); err != nil {
		return nil, err
	}
	for id, v := range lv.versions {
		if v == 0 {
			continue
		}
		h, err := replayHarness(ctx, st, id, now)
		if err != nil {
			return nil, err
		}
		lv.states[id], lv.notProof[id] = h.State, h.NotProofHere()
	}
	return lv, nil
}

// read fills the view from the manifest and receipts projections.
func (lv *ledgerView) read(r *bolt.Reader) error {
	mkv := r.Projection(projections.ManifestName)
	lm, _, err := projections.ManifestOf(mkv)
	if err != nil {
		return err
	}
	lv.storeID, lv.projectFP = lm.StoreID, lm.ProjectRootFingerprint
	if _, lv.published, err = projections.LastPublished(mkv); err != nil {
		return err
	}
	if p, ok, err := projections.ProgramOf(mkv); err != nil {
		return err
	} else if ok {
		r := p.ProgramIdentity
		lv.program = &r
	}
	for _, a := range adapters.All() {
		if err := lv.readHarness(r, a.ID); err != nil {
			return err
		}
	}
	return nil
}

// readHarness fills harness id's entries of the view.
func (lv *ledgerView) readHarness(r *bolt.Reader, id string) error {
	mkv, rkv := r.Projection(projections.ManifestName), r.Projection(projections.ReceiptsName)
	lv.versions[id] = r.StreamVersion(events.HarnessStream(id))
	if rec, ok, err := projections.ManifestRecordOf(mkv, id); err != nil {
		return err
	} else if ok {
		lv.records[id] = rec
	}
	var err error
	if lv.receipts[id], err = projections.HarnessReceipts(rkv, id); err != nil {
		return err
	}
	if lv.proofs[id], err = projections.ReceiptProofOf(rkv, id); err != nil {
		return err
	}
	if h, ok, err := projections.HarnessState(r.Projection(projections.HarnessesName), id); err != nil {
		return err
	} else if ok && (h.State == string(fsm.Failed) || h.State == string(fsm.NeedsUserReview)) {
		lv.diagnostics[id] = h.Reason
	}
	return nil
}

// replayHarness is harness id's history at now, replaying its stream. A
// long stream lets hooks in between slices; what they append meanwhile is
// replayed too.
func replayHarness(ctx context.Context, st *bolt.Store, id string, now time.Time) (*fsm.History, error) {
	rp := fsm.NewReplayer(now)
	if err := st.ReadStreamSliced(ctx, events.HarnessStream(id), 0, rp.Apply); err != nil {
		return nil, fmt.Errorf("replay %s: %w", id, err)
	}
	for _, h := range rp.Finish() {
		if h.Harness == id {
			return h, nil
		}
	}
	return &fsm.History{Harness: id, State: fsm.Initial, Recorded: fsm.Initial}, nil
}

// liveEvidence is activation.Live over the project's files.
type liveEvidence struct {
	g        *Globals
	pr       *project
	m        adapters.Manifest
	a        *adapters.Adapter
	entries  []receipt.Entry // newest first
	proof    projections.ReceiptProof
	now      time.Time
	program  *programCheck
	guidance *guidanceCheck
}

// guidanceCheck reads the guidance files against the recorded ones
// (activation.Guidance) once for every harness of one evaluation.
type guidanceCheck struct {
	pr      *project
	rec     []events.FileDigest
	once    sync.Once
	foreign []adapters.Finding
}

func (c *guidanceCheck) result() []adapters.Finding {
	c.once.Do(func() {
		disk, err := adapters.GuidanceOnDisk(c.pr.root)
		if err != nil {
			// Unreadable: nothing vouches for what agents would read.
			c.foreign = []adapters.Finding{{Path: adapters.StoreDir, Reason: adapters.ReasonForeignGuidance,
				Detail: "The guidance files under " + adapters.StoreDir + " cannot be read (" + err.Error() + "); fix their permissions, then run `tree-ring integrations status`."}}
			return
		}
		_, c.foreign, _ = activation.Guidance(c.rec, disk)
	})
	return c.foreign
}

func (l *liveEvidence) ForeignGuidance() []adapters.Finding { return l.guidance.result() }

// ForeignHooks is true also when the hook file cannot be read: nothing
// vouches for it.
func (l *liveEvidence) ForeignHooks(rec adapters.Record) bool {
	foreign, err := adapters.HookFileForeign(l.pr.root, rec.BridgePath, l.a.ID)
	return foreign || err != nil
}

// programCheck verifies the installed program against its record, or with
// none recorded that it is absent or the running build (foreignProgram),
// once for every harness of one evaluation (a full digest: tens of
// milliseconds for the release binary).
type programCheck struct {
	g    *Globals
	pr   *project
	rec  *events.ProgramIdentity
	once sync.Once
	err  error
}

func (c *programCheck) result() error {
	c.once.Do(func() {
		if c.rec == nil {
			c.err = c.pr.foreignProgram(c.g, nil)
			return
		}
		_, _, c.err = adapters.InspectProgram(c.pr.root, *c.rec, true)
	})
	return c.err
}

func (l *liveEvidence) Program() error { return l.program.result() }

func (l *liveEvidence) Trust() adapters.Trust {
	return l.a.TrustGate.Inspect(adapters.TrustQuery{Project: l.pr.canonical, Getenv: l.g.Getenv, Root: l.pr.root})
}

func (l *liveEvidence) HooksOff() adapters.HooksOff {
	return l.a.HooksSwitch(adapters.TrustQuery{Project: l.pr.canonical, Getenv: l.g.Getenv, Root: l.pr.root})
}

func (l *liveEvidence) Plugin() error {
	_, err := preflight.LoadDescriptor(l.g.Getenv(preflight.DescriptorEnv), l.pr.canonical)
	return err
}

func (l *liveEvidence) Bridge(rec adapters.Record) (string, []string, error) {
	disk, changed, err := adapters.DiskRecord(l.pr.root, l.a.ID, rec)
	return disk.BridgeFingerprint, preflight.ChangedPaths(rec, disk, changed), err
}

// NewestReceipt finds the newest receipt, among those the index retains
// since the harness last entered the proven states, whose file holds the
// bytes the ledger recorded and passes the eight verification rules.
func (l *liveEvidence) NewestReceipt(recomputed string) activation.Found {
	var f activation.Found
	for _, e := range l.entries {
		if e.Position <= l.proof.Epoch || e.Path == "" {
			continue
		}
		if r, ok := l.verified(e, recomputed); ok {
			at, _ := time.Parse(receipt.TimeFormat, r.RecordedAt)
			f.Receipt, f.Age = &r, int64(l.now.Sub(at)/time.Second)
			return f
		}
		f.Rejected++
	}
	return f
}

// verified reads e's receipt file and checks it against the index entry
// and the eight rules.
func (l *liveEvidence) verified(e receipt.Entry, recomputed string) (receipt.Receipt, bool) {
	f, err := l.pr.root.ReadFile(e.Path, receipt.MaxBytes)
	if err != nil || !f.Exists {
		return receipt.Receipt{}, false
	}
	r, err := receipt.Decode(f.Data)
	ok := err == nil && adapters.SHA256Hex(f.Data) == e.SHA256 && r.ReceiptID == e.ReceiptID && r.WorkerKeyFingerprint == e.Worker &&
		preflight.Verify(r, l.m, l.a.ID, recomputed, l.now) == nil
	return r, ok
}
