// Package activation plans and applies bridge publication for init,
// integrations activate/link and integrations deactivate: it compares each
// harness's adapter material with disk and with the ledger's folded state,
// decides every state change with fsm.Decide, publishes create-only, and
// returns the events to append. It reads the ledger only through projection
// snapshots and never imports the store; the command appends the events.
package activation

import (
	"fmt"
	"slices"
	"sort"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

// Command is what the plan is for.
type Command int

// Commands.
const (
	Init Command = iota + 1
	Activate
	Deactivate
	Reconcile // integrations reconcile (reconcile.go)
)

// Input is everything a plan depends on. Build never writes to it.
type Input struct {
	Command Command
	Root    *adapters.ProjectRoot
	// Targets are the harness ids to plan, in any order.
	Targets []string
	// Detections by harness id (missing: not detected).
	Detections map[string]adapters.Detection
	// Accept adopts a user-added Tree Ring block in an instruction file
	// Tree Ring did not create (--accept-managed-block).
	Accept     bool
	Context    adapters.Context
	CLIVersion string
	// Ledger is what the ledger held before the plan (zero when there is
	// no store yet).
	Ledger Ledger
	// ForeignProgram, when set, is the conflict of a program Tree Ring did
	// not install (adapters.ForeignProgramFinding): no bridge that would
	// run it is published.
	ForeignProgram *adapters.Finding
	// ForeignGuidance are the guidance files this store did not record
	// (Guidance): no bridge that points agents at them is published.
	ForeignGuidance []adapters.Finding
}

// Ledger is the folded ledger a plan reads, as plain values: cmd fills it
// from the harnesses and manifest projections. This package does not
// import projections, so that adapters and read models stay siblings and
// neither's types leak into the other's bytes.
type Ledger struct {
	// Initialized is true after store.initialized: only then is there a
	// manifest to publish, for StoreID and ProjectRootFingerprint.
	Initialized            bool
	StoreID                string
	ProjectRootFingerprint string
	// Records are the manifest's records by harness id.
	Records map[string]events.BridgeRecord
	// LastPublished is the digest of the last manifest.published ("" when
	// none).
	LastPublished string
	// Harnesses are the folded harness states by id (absent: no events).
	Harnesses map[string]Harness
}

// Harness is one harness's folded state: its FSM state, the markers of its
// first detection and, while it needs review, why and which paths.
type Harness struct {
	State   fsm.State
	Markers []string
	Reason  string
	Paths   []string
}

// Kind is the outcome of one harness's plan.
type Kind int

// Outcome kinds.
const (
	Unchanged   Kind = iota + 1 // nothing to write or record
	Publish                     // create absent material and/or record matching material
	Review                      // nothing written; the user must reconcile
	Unsupported                 // guidance-only adapter
	Finish                      // a requested deactivation ends (reconcile): owned files removed, harness.deactivated
)

// Pending is an event to append: its stream, type and payload.
type Pending struct {
	Stream  string
	Type    string
	Payload any
}

// Outcome is one harness's result.
type Outcome struct {
	Adapter *adapters.Adapter
	Kind    Kind
	From    fsm.State // state before the plan
	State   fsm.State // state after it
	// Creates are the files publication creates (a block's Whole when its
	// file is absent), in path order.
	Creates []adapters.File
	// Removes are the owned files a finished deactivation removes.
	Removes []Removal
	// Replaces are the files a reconcile replaces, each conditioned on
	// the digest it must still hold: owned files naming a moved root
	// (moved.go), an older definition's files and blocks (upgrade.go).
	Replaces []Replacement
	// ChangedPaths are the paths created or removed (or, in a dry run,
	// to create or remove).
	ChangedPaths []string
	Recognized   bool
	Reason       string   // review reason code
	Paths        []string // review paths
	NextStep     string
	Events       []Pending

	record adapters.Record // the adapter's current contract, as disk holds it
	// forms are the records the current definition may have: its own
	// files, or its hook entries merged into the user's file.
	forms     []adapters.Record
	hasRecord bool // a folded record exists
	published bool // ... and it came from bridge.published
	oldRecord adapters.Record
	noPlanned bool // the manifest cannot take a planned record
	hv        Harness
	findings  []adapters.Finding
	// recomputed is, for an adoption, the bridge fingerprint of the bytes
	// on disk.
	recomputed string
	// gone: a requested deactivation's material is no longer on disk.
	gone bool
	// stuck are the paths of an out-of-date definition that changed since
	// Tree Ring wrote them, which a reconcile does not rewrite (upgrade.go).
	stuck []string
}

// ManifestAction is what happens to activation.json.
type ManifestAction int

// Manifest actions.
const (
	ManifestKeep    ManifestAction = iota + 1 // on disk and semantically equal: preserved byte-for-byte
	ManifestCreate                            // absent: published create-only, last
	ManifestAdopt                             // on disk, equal, but not yet recorded in the ledger
	ManifestBlocked                           // on disk and different (or unreadable): never rewritten
	ManifestNone                              // no store yet (dry run without a store)
	ManifestReplace                           // on disk and different: replaced, on the user's request (reconcile --apply)
)

// Plan is the result of Build: per-harness outcomes in id order, the
// materialized manifest and what happens to it.
type Plan struct {
	Command   Command
	Outcomes  []*Outcome
	Manifest  adapters.Manifest
	Bytes     []byte // Manifest.Encode()
	Action    ManifestAction
	DiskError error // why the manifest on disk could not be read, if so

	in      Input
	disk    *adapters.Manifest
	diskRaw []byte
	move    *events.StoreRootMoved // a reconcile at a moved root (moved.go)
}

// Build plans every target. It reads disk through in.Root and never writes.
func Build(in Input) (*Plan, error) {
	p := &Plan{Command: in.Command, in: in}
	if err := p.planMove(); err != nil {
		return nil, err
	}
	ids := slices.Clone(p.in.Targets)
	sort.Strings(ids)
	ids = slices.Compact(ids)
	for _, id := range ids {
		a, ok := adapters.Lookup(id)
		if !ok {
			return nil, fmt.Errorf("unknown harness %q", id)
		}
		o, err := p.planHarness(a)
		if err != nil {
			return nil, fmt.Errorf("plan %s: %w", id, err)
		}
		p.Outcomes = append(p.Outcomes, o)
	}
	if err := p.reconcileManifest(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Plan) planHarness(a *adapters.Adapter) (*Outcome, error) {
	in := p.in
	o := &Outcome{Adapter: a, From: fsm.Initial}
	hv, ok := in.Ledger.Harnesses[a.ID]
	if ok {
		o.From = hv.State
		o.hv = hv
	}
	o.State = o.From
	if mr, ok := in.Ledger.Records[a.ID]; ok {
		o.hasRecord, o.published, o.oldRecord = true, mr.Published, adapters.RecordOf(mr.Contract)
	}
	// The first detection is recorded; later marker changes are not facts
	// about the harness (publishing a bridge itself adds markers such as
	// AGENTS.md or .claude), so they are not re-recorded.
	if det, ok := in.Detections[a.ID]; ok && det.Detected() && in.Command != Deactivate && len(hv.Markers) == 0 {
		o.add(a, events.TypeHarnessDetected, &events.HarnessDetected{
			Transition: events.Transition{From: string(o.State), To: string(o.State)},
			HarnessID:  a.ID, AdapterVersion: a.Version, Capability: string(a.Capability), Markers: det.MarkerPaths(),
		})
	}
	if !a.Publishes() {
		o.Kind = Unsupported
		o.NextStep = NextGuidance(a)
		return o, nil
	}
	mat := a.Material(in.Context)
	// A hooks file of the user's that holds (or is to hold) Tree Ring's
	// entries is a managed block, not the file Tree Ring would create.
	resolved, err := adapters.Resolve(in.Root, mat)
	if err != nil {
		return nil, err
	}
	o.record = a.Record(resolved)
	o.forms = []adapters.Record{a.Record(mat), a.Record(mat.Merged())}
	if done, err := p.planDeactivation(o); done || err != nil {
		return o, err
	}
	if done, err := p.planReconciled(o, mat, resolved); done || err != nil {
		return o, err
	}
	if o.findings, err = p.evaluate(a, resolved); err != nil {
		return nil, err
	}
	if settled(o.From) {
		return o, p.planSettled(o)
	}
	if p.heldForReview(o) {
		return o, o.review(o.hv.Reason, o.hv.Paths)
	}
	return o, p.planPublication(o)
}

// heldForReview reports whether a review stands until the user consents
// with reconcile --apply: a hook file adopted with commands besides Tree
// Ring's (ReasonForeignHooks), which init or activate must not publish
// over, since its files match.
func (p *Plan) heldForReview(o *Outcome) bool {
	return o.From == fsm.NeedsUserReview && o.hv.Reason == ReasonForeignHooks && p.Command != Reconcile
}

// evaluate compares the material with disk (adapters.Evaluate), a
// foreign program first for a bridge that would run it, then foreign
// guidance for a bridge that points agents at it.
func (p *Plan) evaluate(a *adapters.Adapter, m adapters.Material) ([]adapters.Finding, error) {
	fs, err := adapters.Evaluate(p.in.Root, m)
	if err != nil {
		return fs, err
	}
	var first []adapters.Finding
	if p.in.ForeignProgram != nil && a.RunsProgram() {
		first = append(first, *p.in.ForeignProgram)
	}
	if len(p.in.ForeignGuidance) > 0 && a.PointsAtGuidance() {
		first = append(first, p.in.ForeignGuidance...)
	}
	return append(first, fs...), nil
}

// planDeactivation plans what a requested or finished deactivation
// decides, before any publication is considered: done is true when it
// did.
func (p *Plan) planDeactivation(o *Outcome) (done bool, err error) {
	requested := o.From == fsm.NeedsUserReview && o.hv.Reason == adapters.ReasonDeactivation
	switch {
	case p.Command == Deactivate:
		return true, p.planDeactivate(o)
	case p.Command == Reconcile && requested:
		return true, p.planFinish(o)
	case p.Command == Init && requested:
		o.Kind = Unchanged // a deactivation request sticks until activate
		o.Reason, o.Paths = o.hv.Reason, o.hv.Paths
		if _, left, err := o.ownedLeft(p.in.Root); err == nil && len(left) == 0 {
			o.gone = true
		}
		o.NextStep = reviewNext(o)
		return true, nil
	case p.Command != Activate && o.deactivated():
		o.Kind = Unchanged // a finished deactivation sticks until activate
		o.NextStep = NextActivate(o.Adapter.ID)
		return true, nil
	}
	return false, nil
}

// settled states are owned by proof, trust, plugin and mount checks;
// publication moves only a harness that has no bridge yet (unsupported) or
// that awaits review.
func settled(s fsm.State) bool { return s != fsm.Unsupported && s != fsm.NeedsUserReview }

// stale reports whether the published record is not one of the current
// adapter definition's forms.
func (o *Outcome) stale() bool {
	return o.hasRecord && o.published && !slices.ContainsFunc(o.forms, o.oldRecord.Equal)
}

func (p *Plan) planSettled(o *Outcome) error {
	if o.stale() {
		return o.drift(adapters.ReasonAdapterChanged, o.oldRecord.Paths())
	}
	var bad []adapters.Finding
	for _, f := range o.findings {
		if f.State != adapters.PathMatch {
			bad = append(bad, f)
		}
	}
	if len(bad) == 0 && o.hasRecord && o.published && o.oldRecord.Equal(o.record) {
		o.Kind = Unchanged
		o.NextStep = settledNext(o, p.Command)
		return nil
	}
	reason := adapters.ReasonBridgeFileChanged
	var paths []string
	for _, f := range bad {
		paths = append(paths, f.Path)
	}
	if len(bad) == 0 && o.hasRecord && o.published {
		// Disk holds the other form (our file became the user's with our
		// entries merged in): the record must change, which only a
		// reviewed activate may do.
		paths = o.oldRecord.Differs(o.record)
	}
	if len(bad) > 0 && bad[0].State == adapters.PathConflict && bad[0].Reason != adapters.ReasonExistingFile {
		reason = bad[0].Reason
	}
	if !o.hasRecord || !o.published {
		paths = o.record.Paths()
	}
	return o.drift(reason, paths)
}

// drift moves a settled harness to needs-user-review without writing.
func (o *Outcome) drift(reason string, paths []string) error {
	paths = uniq(paths)
	o.Kind, o.Reason, o.Paths = Review, reason, paths
	if to, err := fsm.Decide(o.State, fsm.Drift); err == nil {
		o.add(o.Adapter, events.TypeBridgeDriftDetected, &events.BridgeDriftDetected{
			Transition: events.Transition{From: string(o.State), To: string(to)},
			HarnessID:  o.Adapter.ID, Paths: paths, Reason: reason,
		})
		o.State = to
	} else if err := o.requireReview(reason, paths, nil); err != nil {
		return err
	}
	o.NextStep = reviewNext(o)
	return nil
}

func (o *Outcome) requireReview(reason string, paths []string, planned *events.BridgeContract) error {
	to, err := fsm.Decide(o.State, fsm.RequireReview)
	if err != nil {
		return err
	}
	o.add(o.Adapter, events.TypePublicationReviewRequired, &events.PublicationReviewRequired{
		Transition: events.Transition{From: string(o.State), To: string(to)},
		HarnessID:  o.Adapter.ID, Reason: reason, Paths: paths, Planned: planned,
	})
	o.State = to
	return nil
}

// review records a review unless the harness already awaits review for the
// same reason and paths (so that a re-run appends nothing).
func (o *Outcome) review(reason string, paths []string) error {
	paths = uniq(paths)
	o.Kind, o.Reason, o.Paths = Review, reason, paths
	o.NextStep = reviewNext(o)
	if o.State == fsm.NeedsUserReview && o.hv.Reason == reason && slices.Equal(o.hv.Paths, paths) {
		return nil
	}
	var planned *events.BridgeContract
	if !o.hasRecord && !o.noPlanned {
		// The manifest carries the planned record in the state the disk
		// supports: nothing is published until the user reconciles.
		c := adapters.ContractOf(o.record)
		c.RecordState = string(fsm.NeedsUserReview)
		planned = &c
	}
	return o.requireReview(reason, paths, planned)
}

func (p *Plan) planPublication(o *Outcome) error {
	if o.stale() {
		return o.review(adapters.ReasonAdapterChanged, o.oldRecord.Paths())
	}
	var conflicts []adapters.Finding
	for _, f := range o.findings {
		if f.State == adapters.PathConflict {
			conflicts = append(conflicts, f)
		}
	}
	if len(conflicts) > 0 {
		var paths []string
		for _, f := range conflicts {
			paths = append(paths, f.Path)
		}
		return o.review(conflicts[0].Reason, paths)
	}
	// A Tree Ring block the user placed in their own instruction file is
	// adopted only with --accept-managed-block; a block this harness's
	// published record already owns is not a new adoption, nor is a file
	// that is exactly the one Tree Ring creates (an interrupted init or
	// activate left it before its bridge was recorded: nothing in it is
	// the user's).
	for _, f := range o.findings {
		if f.State == adapters.PathMatch && f.Block != nil && f.Block.Format == adapters.MarkdownBlock && !f.Whole &&
			!(o.published && ownsBlock(o.oldRecord, f.Block)) && !p.in.Accept {
			return o.review(adapters.ReasonUnaccepted, []string{f.Path})
		}
	}
	o.Kind = Publish
	for _, f := range o.findings {
		switch {
		case f.State == adapters.PathAbsent && f.File != nil:
			o.Creates = append(o.Creates, *f.File)
		case f.State == adapters.PathAbsent:
			o.Creates = append(o.Creates, adapters.File{Path: f.Path, Data: f.Block.Whole, Mode: 0o644})
		case f.State == adapters.PathMatch:
			o.Recognized = o.Recognized || f.Block != nil
		}
	}
	for _, c := range o.Creates {
		o.ChangedPaths = append(o.ChangedPaths, c.Path)
	}
	if len(o.Creates) == 0 {
		o.Recognized = true
	}
	o.ChangedPaths = nonNil(o.ChangedPaths)
	if err := o.publish(); err != nil {
		return err
	}
	o.NextStep = settledNext(o, p.Command)
	return nil
}

// publish appends bridge.published and moves the harness to its resting
// state: in one event when the adapter's settling transition is legal from
// here, otherwise publish first and settle in a second event.
func (o *Outcome) publish() error {
	a := o.Adapter
	settle := map[fsm.State]string{fsm.NeedsTrust: fsm.RequireTrust, fsm.NeedsPlugin: fsm.RequirePlugin}[a.RestingState]
	first := fsm.Publish
	if settle != "" {
		if _, err := fsm.Decide(o.State, settle); err == nil {
			first, settle = settle, ""
		}
	}
	to, err := fsm.Decide(o.State, first)
	if err != nil {
		return err
	}
	c := adapters.ContractOf(o.record)
	o.add(a, events.TypeBridgePublished, &events.BridgePublished{
		Transition: events.Transition{From: string(o.State), To: string(to)},
		HarnessID:  a.ID, AdapterVersion: c.AdapterVersion, Capability: c.Capability,
		BridgeFingerprint: c.BridgeFingerprint, BridgePath: c.BridgePath,
		OwnedFiles: c.OwnedFiles, ManagedBlocks: c.ManagedBlocks,
		ChangedPaths: o.ChangedPaths, Recognized: o.Recognized, RecordState: c.RecordState,
	})
	o.State = to
	switch settle {
	case fsm.RequireTrust:
		to, err := fsm.Decide(o.State, fsm.RequireTrust)
		if err != nil {
			return err
		}
		o.add(a, events.TypeTrustRequired, &events.TrustRequired{Transition: events.Transition{From: string(o.State), To: string(to)}, HarnessID: a.ID})
		o.State = to
	case fsm.RequirePlugin:
		// require_plugin does not leave configured-awaiting-proof in the
		// table; the passive binding has no descriptor, which lose_plugin
		// records.
		to, err := fsm.Decide(o.State, fsm.LosePlugin)
		if err != nil {
			return err
		}
		o.add(a, events.TypePluginDescriptorLost, &events.PluginDescriptorLost{Transition: events.Transition{From: string(o.State), To: string(to)}, HarnessID: a.ID, Reason: "descriptor_absent"})
		o.State = to
	}
	return nil
}

func (p *Plan) planDeactivate(o *Outcome) error {
	if !o.hasRecord || !o.published || o.deactivated() {
		o.Kind = Unchanged
		if o.State == fsm.NeedsUserReview {
			o.Reason, o.Paths = o.hv.Reason, o.hv.Paths
			o.NextStep = reviewNext(o)
		} else {
			o.NextStep = "Nothing to deactivate: Tree Ring has not published a " + o.Adapter.ID + " bridge."
		}
		return nil
	}
	paths := o.oldRecord.Paths()
	o.Kind, o.Reason, o.Paths = Review, adapters.ReasonDeactivation, paths
	if o.State == fsm.NeedsUserReview && o.hv.Reason == adapters.ReasonDeactivation {
		// Asked again: name only what is still there.
		_, left, err := o.ownedLeft(p.in.Root)
		if err != nil {
			return err
		}
		o.Paths, o.gone = left, len(left) == 0
		o.NextStep = reviewNext(o)
		return nil
	}
	o.NextStep = reviewNext(o)
	to, err := fsm.Decide(o.State, fsm.Deactivate)
	if err != nil {
		return err
	}
	o.add(o.Adapter, events.TypeHarnessDeactivationRequested, &events.HarnessDeactivationRequested{
		Transition: events.Transition{From: string(o.State), To: string(to)}, HarnessID: o.Adapter.ID, Paths: paths,
	})
	o.State = to
	return nil
}

func (o *Outcome) add(a *adapters.Adapter, typ string, payload any) {
	o.Events = append(o.Events, Pending{Stream: events.HarnessStream(a.ID), Type: typ, Payload: payload})
}

func ownsBlock(r adapters.Record, b *adapters.Block) bool {
	for _, mb := range r.ManagedBlocks {
		if mb.Path == b.Path && mb.BlockID == b.ID && mb.SHA256 == adapters.SHA256Hex(b.Digest) {
			return true
		}
	}
	return false
}

func uniq(ps []string) []string {
	ps = slices.Clone(ps)
	sort.Strings(ps)
	return nonNil(slices.Compact(ps))
}

func nonNil(ps []string) []string {
	if ps == nil {
		return []string{}
	}
	return ps
}

// HasWork reports whether applying the plan would create a file or append
// an event.
func (p *Plan) HasWork() bool {
	if p.Action == ManifestCreate || p.Action == ManifestAdopt || p.Action == ManifestReplace {
		return true
	}
	for _, o := range p.Outcomes {
		if len(o.Events) > 0 || len(o.Creates) > 0 || len(o.Removes) > 0 || len(o.Replaces) > 0 {
			return true
		}
	}
	return false
}

// Events returns every pending event in append order: harness streams in id
// order, then the manifest.
func (p *Plan) Events() []Pending {
	var out []Pending
	for _, o := range p.Outcomes {
		out = append(out, o.Events...)
	}
	out = append(out, p.movedEvent()...)
	if e, ok := p.reconciledEvent(); ok {
		out = append(out, e)
	}
	if e, ok := p.manifestEvent(); ok {
		out = append(out, e)
	}
	return out
}

func (p *Plan) manifestEvent() (Pending, bool) {
	if p.Action != ManifestCreate && p.Action != ManifestAdopt && p.Action != ManifestReplace {
		return Pending{}, false
	}
	raw := p.Bytes
	if p.Action == ManifestAdopt {
		raw = p.diskRaw
	}
	ids := make([]string, 0, len(p.Manifest.Harnesses))
	for id := range p.Manifest.Harnesses {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	cli := p.in.CLIVersion
	if p.Action == ManifestAdopt {
		cli = p.disk.CLIVersion
	}
	return Pending{Stream: events.StoreStream, Type: events.TypeManifestPublished, Payload: &events.ManifestPublished{
		Path: adapters.ManifestPath, SHA256: adapters.SHA256Hex(raw), Harnesses: ids, CLIVersion: cli, Adopted: p.Action == ManifestAdopt,
	}}, true
}
