package activation

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

// Reconciliation (`integrations reconcile`, docs/reconcile.md) is the
// protocol's reconciliation step as one command: the plan of an activate
// for every target, except that Tree Ring may replace its own
// activation.json (ManifestReplace) and may finish a requested
// deactivation, removing exactly the owned files it published (verified by
// digest) and recording harness.deactivated. Init and activate stay
// create-only; only a reconcile applied on the user's request replaces or
// removes anything, and it never touches a byte outside Tree Ring's own
// files (a managed block in a user's file is left for the user).

// Removal is an owned file a finished deactivation removes: the path and
// the digest it must still hold.
type Removal struct {
	Path   string
	SHA256 string
}

// ReconcileTargets are the harnesses a reconcile without --harness plans:
// the detected ones, every passive binding (as init), and every harness
// the ledger holds a record for or that awaits review.
func ReconcileTargets(l Ledger, detected []string) []string {
	ids := slices.Clone(detected)
	for _, a := range adapters.All() {
		if a.PassiveBinding {
			ids = append(ids, a.ID)
		}
	}
	for id := range l.Records {
		ids = append(ids, id)
	}
	for id, h := range l.Harnesses {
		if h.State == fsm.NeedsUserReview {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return slices.Compact(ids)
}

// deactivated reports whether o's harness finished a deactivation: it is
// back at the initial state although a bridge was published for it (only
// harness.deactivated returns a published harness there). Its record is
// no longer part of the manifest.
func (o *Outcome) deactivated() bool {
	return o.State == fsm.Unsupported && o.hasRecord && o.published
}

// planned reports whether the manifest holds (or, after this plan, will
// hold) o's planned record: a review of a harness nothing was published
// for, in a store with a manifest.
func (o *Outcome) planned() bool {
	if o.hasRecord {
		return !o.published
	}
	return o.Kind == Review && !o.noPlanned && o.Reason != adapters.ReasonDurability
}

// ownedLeft inspects what of o's published record is still on disk: the
// owned files that hold exactly the recorded bytes (removable), and the
// paths the user must handle (an owned file they changed, a managed block
// still in their file).
func (o *Outcome) ownedLeft(root *adapters.ProjectRoot) (removable []Removal, left []string, err error) {
	disk, _, err := adapters.DiskRecord(root, o.Adapter.ID, o.oldRecord)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range o.oldRecord.OwnedFiles {
		switch i := slices.IndexFunc(disk.OwnedFiles, func(d events.FileDigest) bool { return d.Path == f.Path }); {
		case i < 0:
		case disk.OwnedFiles[i].SHA256 == f.SHA256:
			removable = append(removable, Removal{Path: f.Path, SHA256: f.SHA256})
		default:
			left = append(left, f.Path)
		}
	}
	for _, b := range o.oldRecord.ManagedBlocks {
		present := slices.ContainsFunc(disk.ManagedBlocks, func(d events.BlockDigest) bool { return d.Path == b.Path && d.BlockID == b.BlockID })
		if !present {
			// An edited Markdown block still has its markers: still there.
			e, err := root.ReadFile(b.Path, adapters.MaxBridgeFileBytes)
			if err == nil && e.Exists {
				_, present, _ = adapters.FindMarkdownBlock(e.Data, b.BlockID)
			}
		}
		if present {
			left = append(left, b.Path)
		}
	}
	return removable, uniq(left), nil
}

// planFinish plans the end of a requested deactivation: once nothing
// Tree Ring published remains but owned files with their recorded bytes
// (which the apply removes), harness.deactivated returns the harness to
// the initial state; otherwise it stays in review naming what is left.
func (p *Plan) planFinish(o *Outcome) error {
	removable, left, err := o.ownedLeft(p.in.Root)
	if err != nil {
		return err
	}
	o.Reason = adapters.ReasonDeactivation
	if len(left) > 0 {
		o.Kind, o.Paths = Review, left
		var items []string
		for _, p := range left {
			items = append(items, describeOwned(o.Adapter, o.oldRecord, p))
		}
		o.NextStep = NextReview(o.Adapter.ID) + "\nStill on disk, and not Tree Ring's to remove (your file, or one you changed): " + strings.Join(items, "; ") +
			". Remove them by hand, then run `tree-ring integrations reconcile --harness " + o.Adapter.ID + " --apply` again."
		return nil
	}
	to, err := fsm.Decide(o.State, fsm.Remove)
	if err != nil {
		return err
	}
	o.Kind, o.Removes, o.Paths = Finish, removable, nil
	for _, r := range removable {
		o.ChangedPaths = append(o.ChangedPaths, r.Path)
	}
	o.ChangedPaths = nonNil(o.ChangedPaths)
	o.add(o.Adapter, events.TypeHarnessDeactivated, &events.HarnessDeactivated{
		Transition: events.Transition{From: string(o.State), To: string(to)}, HarnessID: o.Adapter.ID,
	})
	o.State = to
	o.NextStep = "Deactivated: Tree Ring publishes nothing for " + o.Adapter.Name + " until you run `tree-ring integrations activate --harness " + o.Adapter.ID + "`."
	return nil
}

// applyRemovals removes the owned files of every finishing deactivation.
// A file that changed meanwhile, or a failed removal, keeps that harness
// in review (its harness.deactivated is dropped; what was removed stays
// removed, and the next reconcile sees the rest).
func (p *Plan) applyRemovals() error {
	var first error
	for _, o := range p.Outcomes {
		if o.Kind != Finish {
			continue
		}
		for _, r := range o.Removes {
			if _, err := p.in.Root.RemoveOwned(r.Path, r.SHA256); err != nil {
				var de *adapters.DurabilityError
				if errors.As(err, &de) {
					continue // removed; only the directory's fsync is in doubt
				}
				o.Events, o.State, o.Kind, o.Removes = nil, o.From, Review, nil
				o.Paths = []string{r.Path}
				o.NextStep = reviewNext(o)
				if first == nil {
					first = fmt.Errorf("remove %s: %w", r.Path, err)
				}
				break
			}
		}
	}
	return first
}

// replaceManifest replaces activation.json with the plan's manifest,
// conditioned on the bytes the plan read.
func (p *Plan) replaceManifest() error {
	m := p.fold()
	p.Manifest, p.Bytes = m, m.Encode()
	err := p.in.Root.ReplaceFile(adapters.ManifestPath, p.Bytes, 0o644, adapters.SHA256Hex(p.diskRaw))
	if err == nil {
		return nil
	}
	p.Action = ManifestBlocked
	var de *adapters.DurabilityError
	if errors.As(err, &de) {
		return p.markChanged(&DurabilityFailure{Paths: []string{adapters.ManifestPath}, Err: err})
	}
	_ = p.markChanged(nil)
	return err
}

// replaceable reports whether a reconcile may replace the manifest on
// disk: it parsed and names this store and project root (or, at a moved
// root, the root the move leaves).
func (p *Plan) replaceable(storeID, rootFP string) bool {
	if p.move != nil && p.disk != nil && p.disk.ProjectRootFingerprint == p.move.PreviousProjectRootFingerprint {
		rootFP = p.move.PreviousProjectRootFingerprint
	}
	return p.Command == Reconcile && p.disk != nil && p.disk.StoreID == storeID && p.disk.ProjectRootFingerprint == rootFP
}

// ManifestChange is what a reconcile does to activation.json: the previous
// and the new bytes, and the harnesses whose record changes.
type ManifestChange struct {
	Previous, Next []byte
	Changed        []string
}

// ManifestChange returns the replacement the plan makes (ok false: none).
func (p *Plan) ManifestChange() (ManifestChange, bool) {
	if p.Action != ManifestReplace {
		return ManifestChange{}, false
	}
	var changed []string
	moved := p.disk.ProjectRootFingerprint != p.Manifest.ProjectRootFingerprint // every record is bound to the new root
	for id, r := range p.Manifest.Harnesses {
		if have, ok := p.disk.Harnesses[id]; moved || !ok || !have.Equal(r) {
			changed = append(changed, id)
		}
	}
	for id := range p.disk.Harnesses {
		if _, ok := p.Manifest.Harnesses[id]; !ok {
			changed = append(changed, id)
		}
	}
	return ManifestChange{Previous: p.diskRaw, Next: p.Bytes, Changed: uniq(changed)}, true
}

// reconciledEvent records the replacement, with the previous digest.
func (p *Plan) reconciledEvent() (Pending, bool) {
	c, ok := p.ManifestChange()
	if !ok {
		return Pending{}, false
	}
	return Pending{Stream: events.StoreStream, Type: events.TypeManifestReconciled, Payload: &events.ManifestReconciled{
		Path: adapters.ManifestPath, PreviousSHA256: adapters.SHA256Hex(c.Previous), SHA256: adapters.SHA256Hex(c.Next), Changed: c.Changed,
	}}, true
}

// Diff is a line diff of old and new (a unified diff's body, every line
// prefixed with " ", "-" or "+", unchanged runs cut to context lines
// around each change) for the reconcile report.
func Diff(name string, old, new []byte, context int) string {
	ops := diffOps(lines(old), lines(new))
	var out strings.Builder
	out.WriteString("--- " + name + "\n+++ " + name + "\n")
	skipped := false
	for k, l := range ops {
		if l[0] == ' ' && !nearChange(ops, k, context) {
			skipped = true
			continue
		}
		if skipped {
			out.WriteString("@@\n")
			skipped = false
		}
		out.WriteString(l + "\n")
	}
	return out.String()
}

// diffOps is the edit script from a to b through their longest common
// subsequence (manifests are a few hundred lines).
func diffOps(a, b []string) []string {
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []string
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops, i, j = append(ops, " "+a[i]), i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			ops, i = append(ops, "-"+a[i]), i+1
		default:
			ops, j = append(ops, "+"+b[j]), j+1
		}
	}
	return ops
}

func nearChange(ops []string, k, context int) bool {
	for d := max(0, k-context); d <= min(len(ops)-1, k+context); d++ {
		if ops[d][0] != ' ' {
			return true
		}
	}
	return false
}

func lines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
