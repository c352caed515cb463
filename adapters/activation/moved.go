package activation

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

// A moved or copied project (docs/reconcile.md, "A moved or copied
// project"): the store names the root it was initialized at (or last moved
// to), and the project is now opened at another one. Every receipt, and the
// manifest on disk, are bound to the old root, so nothing proven there
// counts here. Init and activate refuse (they are create-only and the move
// is the user's decision); a reconcile plans the move: store.root_moved,
// the manifest replaced with the new root, every owned file whose bytes
// name the root replaced while it still holds the recorded digest, and
// every harness that was proven at the old root back to awaiting proof
// (bridge.drift_detected, reason ReasonRootMoved, then bridge.published).

// ReasonRootMoved is the drift reason of a harness whose project root moved.
const ReasonRootMoved = "project_root_moved"

// NextMoved is the step of a project opened at another root than its
// store names.
const NextMoved = "This project was moved or copied here: its store, activation manifest and receipts name another project root, and nothing proven there counts here. " +
	"Run `tree-ring integrations reconcile` to see the change, then `tree-ring integrations reconcile --apply` to record the move and publish the bridges for this root; then open a new session."

// RootMoved reports whether a store initialized as l is opened at another
// project root (rootFP, the current root's fingerprint).
func RootMoved(l Ledger, rootFP string) bool {
	return l.Initialized && rootFP != "" && l.ProjectRootFingerprint != rootFP
}

// RootMovedError is init's, activate's and deactivate's refusal at a moved
// root: only a reconcile records the move.
type RootMovedError struct{}

func (*RootMovedError) Error() string {
	return "the store names another project root (the project was moved or copied here); Tree Ring changed nothing. " +
		"Run `tree-ring integrations reconcile` to see the change, then `tree-ring integrations reconcile --apply` to record the move"
}

// NeedsUserReview marks the error for cmd's error table (exit 5).
func (*RootMovedError) NeedsUserReview() {}

// Replacement is a file a reconcile replaces: its new bytes, and the
// digest it must still hold (an owned file's recorded one; for a file
// holding a Tree Ring block, the whole file as the plan read it).
type Replacement struct {
	adapters.File
	Previous string
}

// planMove decides, before any harness is planned, what a moved root
// means for the plan: a refusal for init, activate and deactivate; for a
// reconcile, the move (the plan then folds the manifest at the new root).
func (p *Plan) planMove() error {
	l, fp := p.in.Ledger, p.in.Context.ProjectRootFingerprint
	if !RootMoved(l, fp) {
		return nil
	}
	if p.Command != Reconcile {
		return &RootMovedError{}
	}
	p.move = &events.StoreRootMoved{PreviousProjectRootFingerprint: l.ProjectRootFingerprint, ProjectRootFingerprint: fp}
	p.in.Ledger.ProjectRootFingerprint = fp
	// The move binds every record to the new root, so every recorded
	// harness is planned, whatever --harness named.
	p.in.Targets = slices.Clone(p.in.Targets)
	for id := range l.Records {
		p.in.Targets = append(p.in.Targets, id)
	}
	return nil
}

// planMoved plans a published, settled harness at a moved root: done is
// false when the ordinary plan applies (no move, nothing published, an
// out-of-date definition, material the user changed, or a managed block
// whose bytes would change: the user's file, never rewritten).
func (p *Plan) planMoved(o *Outcome, resolved adapters.Material) (done bool, err error) {
	if ok, err := p.movable(o); !ok || err != nil {
		return false, err
	}
	o.replacements(resolved)
	if !fsm.Proven(o.From) && len(o.Replaces) == 0 {
		o.Kind = Unchanged
		o.NextStep = settledNext(o, p.Command)
		return true, nil
	}
	// Proof made at the old root does not hold here: leave the proven
	// states (or the resting one) through drift, then publish again.
	o.Kind, o.Recognized = Publish, len(o.Replaces) == 0
	if err := o.republish(ReasonRootMoved); err != nil {
		return true, err
	}
	o.NextStep = settledNext(o, p.Command)
	return true, nil
}

// movable reports whether o is a harness planMoved plans: published and
// settled at the old root, its definition's shape unchanged, its blocks'
// bytes unchanged, and every file of it on disk as recorded.
func (p *Plan) movable(o *Outcome) (bool, error) {
	if p.move == nil || !o.hasRecord || !o.published || o.deactivated() || !settled(o.From) {
		return false, nil
	}
	if !slices.ContainsFunc(o.forms, func(f adapters.Record) bool { return sameShape(f, o.oldRecord) }) || !sameShape(o.record, o.oldRecord) ||
		!sameBlocks(o.record, o.oldRecord) {
		return false, nil
	}
	disk, changed, err := adapters.DiskRecord(p.in.Root, o.Adapter.ID, o.oldRecord)
	return err == nil && len(changed) == 0 && disk.BridgeFingerprint == o.oldRecord.BridgeFingerprint, err
}

// replacements lists the owned files whose bytes change at the new root
// (they name it), each with the digest it was recorded with.
func (o *Outcome) replacements(resolved adapters.Material) {
	for _, f := range resolved.Files {
		if i := slices.IndexFunc(o.oldRecord.OwnedFiles, func(d events.FileDigest) bool { return d.Path == f.Path }); i >= 0 &&
			o.oldRecord.OwnedFiles[i].SHA256 != adapters.SHA256Hex(f.Data) {
			o.Replaces = append(o.Replaces, Replacement{File: f, Previous: o.oldRecord.OwnedFiles[i].SHA256})
			o.ChangedPaths = append(o.ChangedPaths, f.Path)
		}
	}
	o.ChangedPaths = nonNil(o.ChangedPaths)
}

// sameShape reports whether two records hold the same files and blocks
// (by path and block id) under the same adapter version: what a move keeps
// while the bytes naming the root change.
func sameShape(a, b adapters.Record) bool {
	return a.AdapterVersion == b.AdapterVersion && samePaths(a, b)
}

// samePaths reports whether two records hold the same files and blocks, by
// path and block id, under the same bridge path.
func samePaths(a, b adapters.Record) bool {
	paths := func(r adapters.Record) []string {
		var ps []string
		for _, f := range r.OwnedFiles {
			ps = append(ps, "file "+f.Path)
		}
		for _, bl := range r.ManagedBlocks {
			ps = append(ps, "block "+bl.Path+" "+bl.BlockID)
		}
		slices.Sort(ps)
		return ps
	}
	return a.BridgePath == b.BridgePath && slices.Equal(paths(a), paths(b))
}

// applyReplacements replaces the files of every harness a reconcile
// republishes (a move, an older definition), each conditioned on its
// digest. A file that changed
// meanwhile, or a failed replacement, drops that harness's events (what
// was replaced stays replaced; the next status and reconcile see it).
func (p *Plan) applyReplacements() error {
	var first error
	for _, o := range p.Outcomes {
		for _, r := range o.Replaces {
			err := p.in.Root.ReplaceFile(r.Path, r.Data, r.Mode, r.Previous)
			var de *adapters.DurabilityError
			if err == nil || errors.As(err, &de) {
				continue // replaced; at worst only the directory's fsync is in doubt
			}
			o.Events, o.State, o.Kind, o.Replaces = nil, o.From, Review, nil
			o.Reason, o.Paths = adapters.ReasonBridgeFileChanged, []string{r.Path}
			o.NextStep = reviewNext(o)
			if first == nil {
				first = fmt.Errorf("replace %s: %w", r.Path, err)
			}
			break
		}
	}
	return first
}

// movedEvent is the move's store.root_moved, first of the store stream's
// events.
func (p *Plan) movedEvent() []Pending {
	if p.move == nil {
		return nil
	}
	return []Pending{{Stream: events.StoreStream, Type: events.TypeStoreRootMoved, Payload: p.move}}
}

// sameBlocks reports whether two records hold the same managed blocks,
// digests included.
func sameBlocks(a, b adapters.Record) bool {
	key := func(r adapters.Record) []events.BlockDigest {
		bs := slices.Clone(r.ManagedBlocks)
		slices.SortFunc(bs, func(x, y events.BlockDigest) int {
			return strings.Compare(x.Path+"\x00"+x.BlockID, y.Path+"\x00"+y.BlockID)
		})
		return bs
	}
	return slices.Equal(key(a), key(b))
}
