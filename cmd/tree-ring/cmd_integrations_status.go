package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/activation"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
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
	NextStep              string   `json:"next_step"`
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
}

func runStatus(ctx context.Context, g *Globals, o *statusOptions, args []string) error {
	if len(args) > 0 {
		return usagef("integrations status takes no arguments")
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
	verbose := o.Verbose || g.JSON
	rep := statusReport{StoreID: ev.storeID, Integrations: []statusEntry{}}
	for _, h := range ev.harnesses {
		e := h.entry(verbose)
		rep.Integrations = append(rep.Integrations, e)
		if e.ID == "agent-zero" && g.Getenv(preflight.DescriptorEnv) != "" {
			rep.State, rep.NextStep, rep.ReceiptAgeSeconds = e.State, e.NextStep, e.ReceiptAgeSeconds
		}
	}
	if g.JSON {
		return writeJSON(g.Stdout, rep)
	}
	printStatus(g.Stdout, rep)
	return nil
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
		printNext(w, e.NextStep)
	}
}

// evaluation is the read-only assessment status and certify share.
type evaluation struct {
	storeID   string
	ledger    bool // a ledger exists
	manifest  string
	harnesses []*harnessEval
}

// Manifest conditions on disk.
const (
	manifestPresent  = "present"
	manifestMissing  = "missing"
	manifestInvalid  = "invalid"
	manifestMismatch = "mismatch" // another project root or another store than the ledger's
)

// harnessEval is one harness's state with its evidence.
type harnessEval struct {
	adapter    *adapters.Adapter
	state      fsm.State
	next       string
	markers    []string
	ledger     fsm.State // the FSM state at the instant (the recorded state, with expiry)
	events     bool      // the harness stream has events
	hasRecord  bool      // the manifest on disk has a record
	record     adapters.Record
	bridge     string // "", "match", "changed", "stale"
	changed    []string
	recomputed string
	receipt    *preflight.Receipt // the newest valid receipt
	age        int64
	rejected   int    // receipts looked at and rejected before the valid one
	plugin     string // agent-zero: "" or the descriptor refusal
}

func (h *harnessEval) entry(verbose bool) statusEntry {
	e := statusEntry{ID: h.adapter.ID, Name: h.adapter.Name, State: string(h.state), Capability: string(h.adapter.Capability), NextStep: h.next}
	if !verbose {
		return e
	}
	if h.hasRecord && h.state != fsm.Unsupported {
		e.ManagedPaths = h.record.Paths()
	}
	if h.receipt != nil {
		age, n := h.age, h.receipt.ResultCount
		e.ReceiptAgeSeconds, e.LastRecallResultCount, e.LastRecallQueryClass = &age, &n, h.receipt.QueryClass
	}
	return e
}

// nextInit is the step of a harness in a project without a store.
const nextInit = "Run `tree-ring init` to create the project store and publish the detected harnesses' bridges."

func nextActivate(id string) string {
	return "Run `tree-ring integrations activate --harness " + id + "` to publish its bridge, then open a new session."
}

// evaluate assesses every harness that is detected, recorded in the
// manifest or the ledger (and Agent Zero always) at instant now. It never
// writes: the ledger is opened read-only (and not at all when there is
// none), files are only read. The state is:
//
//   - the ledger's FSM state at now (replay of the harness stream, which
//     derives the 30-day expiry), for blocked states (needs-user-review,
//     needs-trust, failed, needs-project-mount, unsupported);
//   - needs-user-review when the manifest on disk is missing, invalid,
//     names another root or store, or its record differs from the ledger's,
//     or the record is stale, or the bridge fingerprint recomputed from the
//     bytes on disk differs (a tampered hook file), even with a receipt;
//   - for a proven FSM state, the state of the newest receipt that passes
//     the eight verification rules (its file's bytes must also be the ones
//     the ledger recorded), else configured-awaiting-proof;
//   - Agent Zero: needs-plugin without a valid plugin descriptor in
//     TREE_RING_AGENT_ZERO_PLUGIN_MANIFEST, needs-user-review unless its
//     record is the exact passive binding, else as above.
func evaluate(ctx context.Context, g *Globals, pr *project, now time.Time) (*evaluation, error) {
	ev := &evaluation{}
	dets := detectionsByID(adapters.Detect(pr.canonical, g.Getenv("HOME")))
	m, _, exists, merr := adapters.LoadManifest(pr.root)
	var mfe *adapters.ManifestError
	switch {
	case merr != nil && !errors.As(merr, &mfe) && !isFSTyped(merr):
		return nil, fmt.Errorf("read %s: %w", adapters.ManifestPath, merr)
	case merr != nil:
		ev.manifest = manifestInvalid
	case !exists:
		ev.manifest = manifestMissing
	case m.ProjectRootFingerprint != pr.fingerprint:
		ev.manifest = manifestMismatch
	default:
		ev.manifest = manifestPresent
	}
	ledger, err := pr.hasLedger()
	if err != nil {
		return nil, fmt.Errorf("--root %s: %w", g.Root, unwrapPath(err))
	}
	ev.ledger = ledger
	states := map[string]fsm.State{}
	versions := map[string]uint64{}
	var lm adapters.Manifest
	lrecs := map[string]events.BridgeRecord{}
	receipts := map[string][]projections.ReceiptEntry{}
	proofs := map[string]projections.ReceiptProof{}
	if ledger {
		st, err := g.OpenStore(true)
		if err != nil {
			return nil, err
		}
		defer st.Close()
		err = st.View(func(r *bolt.Reader) error {
			mkv, rkv := r.Projection(projections.ManifestName), r.Projection(projections.ReceiptsName)
			var err error
			fm, _, err := projections.ManifestOf(mkv)
			if err != nil {
				return err
			}
			lm = adapters.ManifestOf(fm.StoreID, fm.ProjectRootFingerprint, Version, fm.Records)
			for _, a := range adapters.All() {
				versions[a.ID] = r.StreamVersion(events.HarnessStream(a.ID))
				if rec, ok, err := projections.ManifestRecordOf(mkv, a.ID); err != nil {
					return err
				} else if ok {
					lrecs[a.ID] = rec
				}
				if receipts[a.ID], err = projections.HarnessReceipts(rkv, a.ID); err != nil {
					return err
				}
				if proofs[a.ID], err = projections.ReceiptProofOf(rkv, a.ID); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		ev.storeID = lm.StoreID
		if ev.manifest == manifestPresent && (m.StoreID != lm.StoreID || m.ProjectRootFingerprint != lm.ProjectRootFingerprint) {
			ev.manifest = manifestMismatch
		}
		for id, v := range versions {
			if v == 0 {
				continue
			}
			// The recorded state from the FSM: replay of the harness stream
			// at now (fsm.StateAt), which derives the 30-day expiry.
			rp := fsm.NewReplayer(now)
			if err := st.ReadStream(ctx, events.HarnessStream(id), 0, rp.Apply); err != nil {
				return nil, fmt.Errorf("replay %s: %w", id, err)
			}
			states[id] = fsm.Initial
			for _, h := range rp.Finish() {
				if h.Harness == id {
					states[id] = h.State
				}
			}
		}
	}
	for _, a := range adapters.All() {
		d := dets[a.ID]
		h := &harnessEval{adapter: a, markers: d.MarkerPaths(), ledger: fsm.Initial, events: versions[a.ID] > 0}
		if s, ok := states[a.ID]; ok {
			h.ledger = s
		}
		if ev.manifest == manifestPresent {
			h.record, h.hasRecord = m.Harnesses[a.ID]
		}
		if !d.Detected() && !h.hasRecord && !h.events && a.ID != "agent-zero" {
			continue
		}
		ev.harnesses = append(ev.harnesses, h)
		if !ledger {
			h.state, h.next = fsm.Initial, nextInit
			continue
		}
		if a.Support == adapters.Unsupported {
			h.state = fsm.Unsupported
			h.next = activation.NextFor(a, h.state, false)
			continue
		}
		h.assess(g, pr, ev, m, lrecs, receipts[a.ID], proofs[a.ID], now)
	}
	return ev, nil
}

// assess resolves a maintained (or passive) adapter's state.
func (h *harnessEval) assess(g *Globals, pr *project, ev *evaluation, m adapters.Manifest,
	lrecs map[string]events.BridgeRecord, entries []projections.ReceiptEntry, proof projections.ReceiptProof, now time.Time) {
	a := h.adapter
	set := func(s fsm.State, next string) { h.state, h.next = s, next }
	if a.ID == "agent-zero" {
		if _, err := preflight.LoadDescriptor(g.Getenv(preflight.DescriptorEnv), pr.canonical); err != nil {
			h.plugin = err.Error()
			set(fsm.NeedsPlugin, activation.NextNeedsPlugin)
			return
		}
	}
	if !h.events && !h.hasRecord {
		set(fsm.Initial, nextActivate(a.ID))
		return
	}
	blocked := func() bool {
		switch h.ledger {
		case fsm.ConfiguredAwaitingProof, fsm.Active, fsm.ActiveIsolated:
			return false
		case fsm.NeedsPlugin:
			return a.ID != "agent-zero"
		}
		return true
	}
	if ev.manifest != manifestPresent || !h.hasRecord {
		if blocked() {
			set(h.ledger, activation.NextFor(a, h.ledger, false))
			return
		}
		why := adapters.ManifestPath + " is " + ev.manifest
		switch ev.manifest {
		case manifestPresent:
			why = adapters.ManifestPath + " has no record for this harness"
		case manifestMismatch:
			why = adapters.ManifestPath + " names another project root or store"
		}
		set(fsm.NeedsUserReview, activation.NextReview(a.ID)+" "+why+".")
		return
	}
	if !preflight.Current(a, h.record) {
		h.bridge = "stale"
		set(fsm.NeedsUserReview, activation.NextStale)
		return
	}
	if lr, ok := lrecs[a.ID]; !ok || !lr.Published || !adapters.RecordOf(lr.Contract).Equal(h.record) {
		if blocked() {
			set(h.ledger, activation.NextFor(a, h.ledger, false))
			return
		}
		set(fsm.NeedsUserReview, activation.NextReview(a.ID)+" Its record in "+adapters.ManifestPath+" differs from the ledger's.")
		return
	}
	if a.ID == "agent-zero" && !preflight.PassiveBinding(h.record) {
		set(fsm.NeedsUserReview, activation.NextReview(a.ID))
		return
	}
	disk, changed, err := adapters.DiskRecord(pr.root, a.ID, h.record)
	h.recomputed, h.changed = disk.BridgeFingerprint, preflight.ChangedPaths(h.record, disk, changed)
	if err != nil || disk.BridgeFingerprint != h.record.BridgeFingerprint {
		h.bridge = "changed"
		next := activation.NextReview(a.ID)
		if len(h.changed) > 0 {
			next += " Changed on disk: " + strings.Join(h.changed, ", ") + "."
		}
		set(fsm.NeedsUserReview, next)
		return
	}
	h.bridge = "match"
	if blocked() {
		set(h.ledger, activation.NextFor(a, h.ledger, false))
		return
	}
	if fsm.Proven(h.ledger) {
		h.newestValid(pr, m, entries, proof, now)
	}
	if h.receipt != nil {
		s := fsm.State(h.receipt.State)
		set(s, activation.NextFor(a, s, false))
		return
	}
	set(fsm.ConfiguredAwaitingProof, activation.NextAwaitingProof)
}

// newestValid finds the newest receipt, among those the index retains
// since the harness last entered the proven states, whose file holds the
// bytes the ledger recorded and passes the eight verification rules.
func (h *harnessEval) newestValid(pr *project, m adapters.Manifest, entries []projections.ReceiptEntry, proof projections.ReceiptProof, now time.Time) {
	for _, e := range entries { // newest first
		if e.Position <= proof.Epoch || e.Path == "" {
			continue
		}
		f, err := pr.root.ReadFile(e.Path, preflight.MaxReceiptBytes)
		if err != nil || !f.Exists {
			h.rejected++
			continue
		}
		sum := sha256.Sum256(f.Data)
		r, err := preflight.DecodeReceipt(f.Data)
		if err != nil || hex.EncodeToString(sum[:]) != e.SHA256 || r.ReceiptID != e.ReceiptID || r.WorkerKeyFingerprint != e.Worker ||
			preflight.Verify(r, m, h.adapter.ID, h.recomputed, now) != nil {
			h.rejected++
			continue
		}
		at, _ := time.Parse(preflight.TimeFormat, r.RecordedAt)
		h.receipt, h.age = &r, int64(now.Sub(at)/time.Second)
		return
	}
}

// isFSTyped reports the typed refusals of the pinned root (a symlink, a
// directory in place of the manifest...): the manifest is then invalid.
func isFSTyped(err error) bool {
	var sl *adapters.SymlinkError
	var nr *adapters.NotRegularError
	var nd *adapters.NotDirError
	var tl *adapters.TooLargeError
	return errors.As(err, &sl) || errors.As(err, &nr) || errors.As(err, &nd) || errors.As(err, &tl)
}
