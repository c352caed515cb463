package activation

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

// reconcileManifest materializes the manifest the plan's events lead to and
// compares it with activation.json on disk. The manifest is create-only like
// every bridge: when it exists and a harness's record would differ from the
// one it holds (or the file cannot be read, or states another store), that
// harness's plan is blocked (nothing written, needs-user-review) and the
// file is left as it is. A semantically unchanged manifest is kept
// byte-for-byte.
func (p *Plan) reconcileManifest() error {
	if !p.in.Ledger.Initialized {
		p.Action = ManifestNone
		return nil
	}
	disk, raw, exists, err := adapters.LoadManifest(p.in.Root)
	var merr *adapters.ManifestError
	switch {
	case err == nil:
		if exists {
			p.disk, p.diskRaw = &disk, raw
		}
	case errors.As(err, &merr), adapters.IsRootRefusal(err):
		exists, p.DiskError = true, err
	default:
		return fmt.Errorf("read %s: %w", adapters.ManifestPath, err)
	}
	after := p.fold()
	if exists && !p.replaceable(after.StoreID, after.ProjectRootFingerprint) {
		if err := p.blockDiffering(after); err != nil {
			return err
		}
		after = p.fold()
	}
	p.Manifest, p.Bytes = after, after.Encode()
	differs := p.disk == nil || !after.SemanticallyEqual(*p.disk)
	switch {
	case !exists:
		p.Action = ManifestCreate
	case differs && p.replaceable(after.StoreID, after.ProjectRootFingerprint):
		p.Action = ManifestReplace
	case differs:
		p.Action = ManifestBlocked
	case p.in.Ledger.LastPublished == adapters.SHA256Hex(p.diskRaw):
		p.Action = ManifestKeep
	default:
		p.Action = ManifestAdopt
	}
	return nil
}

// blockDiffering blocks every publishing harness whose record in the
// manifest after the plan would differ from the one on disk.
func (p *Plan) blockDiffering(after adapters.Manifest) error {
	storeDiff := p.disk == nil || p.disk.StoreID != after.StoreID || p.disk.ProjectRootFingerprint != after.ProjectRootFingerprint
	for _, o := range p.Outcomes {
		if !o.Adapter.Publishes() {
			continue
		}
		want, wantOK := after.Harnesses[o.Adapter.ID]
		var have adapters.Record
		haveOK := false
		if p.disk != nil {
			have, haveOK = p.disk.Harnesses[o.Adapter.ID]
		}
		if !wantOK && !haveOK || !storeDiff && wantOK && haveOK && want.Equal(have) {
			continue
		}
		if err := o.blockOnManifest(); err != nil {
			return err
		}
	}
	return nil
}

// blockOnManifest turns a plan the manifest cannot take into a review,
// keeping only detection events. A review keeps its reason and drops its
// planned record; anything else becomes manifest_mutation.
func (o *Outcome) blockOnManifest() error {
	var kept []Pending
	for _, e := range o.Events {
		if e.Type == events.TypeHarnessDetected {
			kept = append(kept, e)
		}
	}
	reason, paths := adapters.ReasonManifest, []string{adapters.ManifestPath}
	if o.Kind == Review && o.Reason != adapters.ReasonManifest {
		reason, paths = o.Reason, append(append([]string(nil), o.Paths...), adapters.ManifestPath)
	}
	o.Events, o.Creates, o.ChangedPaths, o.Recognized = kept, nil, nil, false
	o.State, o.noPlanned = o.From, true
	if settled(o.State) {
		return o.drift(reason, paths)
	}
	return o.review(reason, paths)
}

// fold applies the records the plan's pending events state to the ledger's
// manifest records (the manifest projection's rule, events.BridgeRecordOf)
// and materializes the result, without the record of a harness whose
// deactivation finished (harness.deactivated: nothing of it is installed).
func (p *Plan) fold() adapters.Manifest {
	l := p.in.Ledger
	recs := maps.Clone(l.Records)
	if recs == nil {
		recs = map[string]events.BridgeRecord{}
	}
	for _, o := range p.Outcomes {
		for _, pe := range o.Events {
			if r, ok := events.BridgeRecordOf(pe.Payload); ok {
				recs[strings.TrimPrefix(pe.Stream, events.HarnessPrefix)] = r
			}
		}
	}
	for id, r := range recs {
		if r.Published && p.stateAfter(id) == fsm.Unsupported {
			delete(recs, id)
		}
	}
	return adapters.ManifestOf(l.StoreID, l.ProjectRootFingerprint, p.in.CLIVersion, recs)
}

// stateAfter is harness id's state once the plan's events are appended.
func (p *Plan) stateAfter(id string) fsm.State {
	for _, o := range p.Outcomes {
		if o.Adapter.ID == id {
			return o.State
		}
	}
	if h, ok := p.in.Ledger.Harnesses[id]; ok {
		return h.State
	}
	return fsm.Initial
}

// DurabilityFailure is returned by Apply when a created path's durability
// is indeterminate. Nothing was rolled back; every harness changed in the
// run is recorded needs-user-review and the manifest was not published
// (or, when its own fsync failed, left on disk unrecorded).
type DurabilityFailure struct {
	Paths []string
	Err   error
}

func (e *DurabilityFailure) Error() string {
	return fmt.Sprintf("publication durability is indeterminate for %v: %v; nothing was rolled back and the changed harnesses are marked needs-user-review", e.Paths, e.Err)
}

func (e *DurabilityFailure) Unwrap() error { return e.Err }

// Apply publishes the plan create-only: each publishing harness's absent
// files in id order (a path shared by two harnesses is created once), then
// the manifest, last. A harness whose creation fails before anything of it
// was written becomes a review; after a durability failure publication
// stops, every changed harness is marked needs-user-review and a
// *DurabilityFailure is returned. Either way the outcomes' events describe
// what is on disk and must be appended.
func (p *Plan) Apply() error {
	created := map[string]bool{}
	var fail *DurabilityFailure
	for _, o := range p.Outcomes {
		if o.Kind != Publish || len(o.Creates) == 0 {
			continue
		}
		if fail != nil {
			o.abandon()
			continue
		}
		var err error
		if fail, err = o.create(p.in.Root, created); err != nil {
			return err
		}
	}
	if fail != nil {
		return p.markChanged(fail)
	}
	removeErr := errors.Join(p.applyRemovals(), p.applyReplacements())
	if err := p.applyManifest(); err != nil {
		return err
	}
	return removeErr
}

// applyManifest creates (or, for a reconcile, replaces) activation.json,
// last.
func (p *Plan) applyManifest() error {
	switch p.Action {
	case ManifestReplace:
		return p.replaceManifest()
	case ManifestCreate:
	default:
		return nil
	}
	m := p.fold()
	p.Manifest, p.Bytes = m, m.Encode()
	err := p.in.Root.CreateFile(adapters.ManifestPath, p.Bytes, 0o644, 0o700)
	if err == nil {
		return nil
	}
	p.Action = ManifestBlocked
	return p.markChanged(&DurabilityFailure{Paths: []string{adapters.ManifestPath}, Err: err})
}

// create creates o's absent files create-only (a path another harness of
// the run created is skipped): a clean failure before anything of o was
// written becomes a review; otherwise the returned failure is a
// durability one, and o is marked indeterminate.
func (o *Outcome) create(root *adapters.ProjectRoot, created map[string]bool) (*DurabilityFailure, error) {
	var own []string
	for _, f := range o.Creates {
		if created[f.Path] {
			continue
		}
		dirPerm := uint32(0o755)
		if strings.HasPrefix(f.Path, adapters.StoreDir+"/") {
			dirPerm = 0o700
		}
		err := root.CreateFile(f.Path, f.Data, f.Mode, dirPerm)
		if err == nil {
			created[f.Path] = true
			own = append(own, f.Path)
			continue
		}
		var de *adapters.DurabilityError
		if !errors.As(err, &de) && len(own) == 0 {
			return nil, o.createFailed(f.Path, err)
		}
		// A failed sync, or part of this harness on disk: indeterminate.
		fail := &DurabilityFailure{Paths: append(own, f.Path), Err: err}
		return fail, o.indeterminate(uniq(fail.Paths), true)
	}
	return nil, nil
}

// markChanged records every harness that published something in this run
// as needs-user-review, after its bridge.published.
func (p *Plan) markChanged(fail *DurabilityFailure) error {
	for _, o := range p.Outcomes {
		if o.Kind == Publish && len(o.ChangedPaths) > 0 {
			if err := o.indeterminate(o.ChangedPaths, false); err != nil {
				return err
			}
		}
	}
	if p.Action == ManifestCreate {
		p.Action = ManifestBlocked
	}
	return fail
}

// indeterminate marks o needs-user-review for durability. With replace,
// o's bridge.published is dropped first (its material is incomplete) and the
// review carries the planned contract when o has none yet.
func (o *Outcome) indeterminate(paths []string, replace bool) error {
	if replace {
		var kept []Pending
		for _, e := range o.Events {
			if e.Type == events.TypeHarnessDetected {
				kept = append(kept, e)
			}
		}
		o.Events, o.State = kept, o.From
	}
	o.Kind, o.Reason, o.Paths = Review, adapters.ReasonDurability, uniq(paths)
	o.NextStep = reviewNext(o)
	var planned *events.BridgeContract
	if replace && !o.hasRecord {
		c := adapters.ContractOf(o.record)
		planned = &c
	}
	return o.requireReview(o.Reason, o.Paths, planned)
}

// createFailed turns a clean creation failure (nothing of o written) into a
// review.
func (o *Outcome) createFailed(path string, err error) error {
	var kept []Pending
	for _, e := range o.Events {
		if e.Type == events.TypeHarnessDetected {
			kept = append(kept, e)
		}
	}
	o.Events, o.State, o.Creates, o.ChangedPaths, o.Recognized = kept, o.From, nil, nil, false
	reason := adapters.ReasonPublicationFailed
	var sl *adapters.SymlinkError
	var ex *adapters.ExistsError
	var nd *adapters.NotDirError
	switch {
	case errors.As(err, &sl):
		reason, path = adapters.ReasonSymlink, sl.Path
	case errors.As(err, &ex):
		reason = adapters.ReasonExistingFile
	case errors.As(err, &nd):
		reason, path = adapters.ReasonNotRegular, nd.Path
	}
	if settled(o.State) {
		return o.drift(reason, []string{path})
	}
	return o.review(reason, []string{path})
}

// abandon drops o's publication: publication stopped before reaching it.
func (o *Outcome) abandon() {
	var kept []Pending
	for _, e := range o.Events {
		if e.Type == events.TypeHarnessDetected {
			kept = append(kept, e)
		}
	}
	o.Events, o.State, o.Creates, o.ChangedPaths, o.Recognized = kept, o.From, nil, nil, false
	o.Kind = Unchanged
	o.NextStep = "Publication stopped before this harness; run `tree-ring integrations activate --harness " + o.Adapter.ID + "` once the failure above is resolved."
}
