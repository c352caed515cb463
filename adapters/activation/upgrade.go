package activation

import (
	"slices"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

// An out-of-date definition (docs/reconcile.md, "A newer definition"): a
// harness published by an older adapter version (the Rust Tree Ring's
// version 3 Codex hooks) is needs-user-review, and init and activate never
// rewrite it. A reconcile --apply is the user's decision to: each owned
// file is replaced, and each Markdown block Tree Ring wrote into a user's
// file (AGENTS.md) is rewritten in place, only while it holds the bytes
// recorded for it, every byte outside the block kept; then the harness is
// published at the current version. Handler entries merged into a user's
// settings file are JSON of theirs: those stay the user's to edit.

// planReconciled plans what only a reconcile does to a published harness:
// its move to a new root (moved.go), or its older definition's rewrite
// (mat: the current definition's material; resolved: as disk holds it).
func (p *Plan) planReconciled(o *Outcome, mat, resolved adapters.Material) (done bool, err error) {
	if done, err := p.planMoved(o, resolved); done || err != nil {
		return done, err
	}
	return p.planUpgrade(o, mat)
}

// planUpgrade plans a reconcile of a published harness whose record is an
// older definition: done is false when the ordinary plan applies (not a
// reconcile, not stale, the files changed since they were recorded, the
// current definition has other paths, or a change Tree Ring may not make).
func (p *Plan) planUpgrade(o *Outcome, mat adapters.Material) (done bool, err error) {
	if p.Command != Reconcile || !o.hasRecord || !o.published || o.deactivated() || !o.stale() {
		return false, nil
	}
	form, ok := o.upgradeForm(mat)
	if !ok {
		return false, nil
	}
	disk, changed, err := adapters.DiskRecord(p.in.Root, o.Adapter.ID, o.oldRecord)
	if err != nil || len(changed) > 0 || disk.BridgeFingerprint != o.oldRecord.BridgeFingerprint {
		o.stuck = uniq(append(changed, o.oldRecord.Differs(disk)...)) // reviewNext names them
		return false, err
	}
	reps, ok, err := o.upgradeReplacements(p.in.Root, form)
	if err != nil || !ok {
		return false, err
	}
	o.stuck = nil
	o.record, o.Replaces, o.Kind = o.Adapter.Record(form), reps, Publish
	for _, r := range reps {
		o.ChangedPaths = append(o.ChangedPaths, r.Path)
	}
	o.ChangedPaths = uniq(o.ChangedPaths)
	if err := o.republish(adapters.ReasonAdapterChanged); err != nil {
		return true, err
	}
	o.NextStep = settledNext(o, p.Command)
	return true, nil
}

// republish publishes o's record again; from a settled state (a proof, a
// trust or plugin wait made for the old bytes) it first records the drift
// that leaves it, with reason.
func (o *Outcome) republish(reason string) error {
	if settled(o.State) {
		to, err := fsm.Decide(o.State, fsm.Drift)
		if err != nil {
			return err
		}
		o.add(o.Adapter, events.TypeBridgeDriftDetected, &events.BridgeDriftDetected{
			Transition: events.Transition{From: string(o.State), To: string(to)}, HarnessID: o.Adapter.ID, Paths: o.ChangedPaths, Reason: reason,
		})
		o.State = to
	}
	return o.publish()
}

// upgradeForm is the current definition's material in the form the old
// record has (its own files, or entries merged into the user's file):
// the same files and blocks by path and block id.
func (o *Outcome) upgradeForm(mat adapters.Material) (adapters.Material, bool) {
	for _, m := range []adapters.Material{mat, mat.Merged()} {
		if samePaths(o.Adapter.Record(m), o.oldRecord) {
			return m, true
		}
	}
	return adapters.Material{}, false
}

// upgradeReplacements lists what the upgrade replaces: each owned file
// whose bytes change (conditioned on its recorded digest) and each file
// holding a Markdown block whose bytes change (the whole file, conditioned
// on the bytes read now, with only the block rewritten). ok is false for a
// block of another format (handler entries in a user's settings file).
func (o *Outcome) upgradeReplacements(root *adapters.ProjectRoot, form adapters.Material) (reps []Replacement, ok bool, err error) {
	for _, f := range form.Files {
		i := slices.IndexFunc(o.oldRecord.OwnedFiles, func(d events.FileDigest) bool { return d.Path == f.Path })
		if d := o.oldRecord.OwnedFiles[i].SHA256; d != adapters.SHA256Hex(f.Data) {
			reps = append(reps, Replacement{File: f, Previous: d})
		}
	}
	for _, b := range form.Blocks {
		i := slices.IndexFunc(o.oldRecord.ManagedBlocks, func(d events.BlockDigest) bool { return d.Path == b.Path && d.BlockID == b.ID })
		prev := o.oldRecord.ManagedBlocks[i].SHA256
		if prev == adapters.SHA256Hex(b.Digest) {
			continue
		}
		if b.Format != adapters.MarkdownBlock {
			// Unreachable while DiskRecord locates only current entries;
			// kept as the rule: a user's settings file is never rewritten.
			o.stuck = []string{b.Path}
			return nil, false, nil
		}
		e, err := root.ReadFile(b.Path, adapters.MaxBridgeFileBytes)
		if err != nil || !e.Exists {
			return nil, false, err
		}
		data, err := adapters.RewriteMarkdownBlock(b.Path, e.Data, b.ID, prev, b.Digest)
		if err != nil {
			o.stuck = []string{b.Path}
			return nil, false, nil
		}
		reps = append(reps, Replacement{File: adapters.File{Path: b.Path, Data: data, Mode: 0o644}, Previous: adapters.SHA256Hex(e.Data)})
	}
	return reps, true, nil
}
