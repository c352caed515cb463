package activation

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/fsm"
)

// Bounds of an adoption's receipt scan. A directory holding more entries
// refuses the adoption (ErrAdoptTooLarge) rather than leaving files the
// ledger does not know, which it would otherwise have to tell apart from
// its own crash leftovers.
const (
	maxAdoptDirEntries = 4096
	maxAdoptReceipts   = 20000
)

// ErrAdoptTooLarge refuses an adoption whose receipts exceed the bounds.
var ErrAdoptTooLarge = errors.New("the receipts directory holds more files than Tree Ring adopts at once; move the oldest receipts aside, then run `tree-ring init` again")

// AdoptError refuses an adoption: the manifest on disk cannot be adopted
// as it is. Nothing is written; the manifest is never replaced.
type AdoptError struct{ Reason string }

func (e *AdoptError) Error() string {
	return "cannot adopt " + adapters.ManifestPath + ": " + e.Reason + "; Tree Ring neither adopts nor replaces it (review or move it aside, then run `tree-ring init`)"
}

// UnadoptableError is status in a project with no ledger whose
// activation.json init will not adopt: it names another project root (a
// clone or a copy of another checkout brought it) or does not decode. Its
// step is the one that then works: move it aside, then init.
type UnadoptableError struct{ Condition string } // ManifestMismatch or ManifestInvalid

func (e *UnadoptableError) Error() string {
	why := "names another project root (a clone or a copy of another checkout brought it): its store, bridges and receipts are not this project's"
	if e.Condition != ManifestMismatch {
		why = "does not decode as an activation manifest"
	}
	return adapters.ManifestPath + " " + why + ", so `tree-ring init` does not adopt it and nothing here is active; repair: review it, move it aside (`mv " +
		adapters.ManifestPath + " " + adapters.ManifestPath + ".review`), then run `tree-ring init`"
}

// Diagnostic is the code a failed run records.
func (e *UnadoptableError) Diagnostic() string {
	if e.Condition == ManifestMismatch {
		return "foreign_root"
	}
	return "manifest_invalid"
}

// AdoptInput is what an adoption reads: the project (whose manifest and
// receipts another writer, the Rust Tree Ring, left there), its root
// fingerprint, this CLI's version and the clock receipts are verified by
// (read once, only when there is a manifest to adopt).
type AdoptInput struct {
	Root                   *adapters.ProjectRoot
	ProjectRootFingerprint string
	CLIVersion             string
	Now                    func() time.Time
	// ForeignGuidance are the guidance files no store recorded (Guidance
	// with nothing recorded): a record whose bridge points agents at them
	// is adopted as awaiting review.
	ForeignGuidance []adapters.Finding
}

// Adoption is what init records to adopt a manifest, in one transaction on
// a new ledger: store.initialized with the manifest's store id and
// store.adopted (the manifest's digest), then per harness of the manifest,
// in id order, its record as published (or, when the material on disk no
// longer matches it, as awaiting review), the review a stale adapter
// definition needs, and its receipt files (receipt.foreign: data, never
// proof, whether or not the eight rules verify them). Nothing is written
// to the project.
type Adoption struct {
	Manifest adapters.Manifest
	Events   []Pending
	Outcomes []*Outcome // per harness, in id order: the state it is adopted in
	Found    int        // receipt files found
	Verified int        // ... of which pass the eight rules (still not proof)
}

// Adopt plans the adoption of the manifest on disk. exists is false when
// there is none (nothing to adopt). A manifest that does not decode, or
// names another project root, is an *AdoptError.
func Adopt(in AdoptInput) (ad *Adoption, exists bool, err error) {
	m, raw, exists, err := adapters.LoadManifest(in.Root)
	var merr *adapters.ManifestError
	switch {
	case errors.As(err, &merr):
		return nil, true, &AdoptError{Reason: merr.Error()}
	case adapters.IsRootRefusal(err):
		return nil, true, &AdoptError{Reason: err.Error()}
	case err != nil:
		return nil, true, fmt.Errorf("read %s: %w", adapters.ManifestPath, err)
	case !exists:
		return nil, false, nil
	case m.ProjectRootFingerprint != in.ProjectRootFingerprint:
		return nil, true, &AdoptError{Reason: "it names another project root"}
	}
	ad = &Adoption{Manifest: m}
	now := in.Now()
	ids := make([]string, 0, len(m.Harnesses))
	for id := range m.Harnesses {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var harnessEvents []Pending
	for _, id := range ids {
		o, err := adoptHarness(in.Root, id, m.Harnesses[id], in.ForeignGuidance)
		if err != nil {
			return nil, true, fmt.Errorf("adopt %s: %w", id, err)
		}
		scan, err := ScanReceipts(in.Root, m, id, o.Recomputed(), now, maxAdoptReceipts-ad.Found)
		if err != nil {
			return nil, true, err
		}
		o.adoptReceipts(scan)
		ad.Found += len(scan)
		for _, r := range scan {
			if r.verified {
				ad.Verified++
			}
		}
		ad.Outcomes = append(ad.Outcomes, o)
		harnessEvents = append(harnessEvents, o.Events...)
	}
	ad.Events = append([]Pending{
		{Stream: events.StoreStream, Type: events.TypeStoreInitialized, Payload: &events.StoreInitialized{
			StoreID: m.StoreID, Format: 1, ProjectRootFingerprint: m.ProjectRootFingerprint, CLIVersion: in.CLIVersion,
		}},
		{Stream: events.StoreStream, Type: events.TypeStoreAdopted, Payload: &events.StoreAdopted{
			StoreID: m.StoreID, ManifestSHA256: adapters.SHA256Hex(raw), CLIVersion: m.CLIVersion, Harnesses: ids,
			ReceiptsFound: ad.Found, ReceiptsVerified: ad.Verified, ReceiptsUntrusted: ad.Found - ad.Verified,
		}},
	}, harnessEvents...)
	return ad, true, nil
}

// adoptHarness records harness id's manifest record rec as the ledger's:
// published as it is when the material on disk matches it (the adapter's
// resting state follows, as for a publication), then, when the record is
// not this CLI's current definition (an adapter version 3 Codex or Claude
// Code hook, or a passive binding that is not the exact binding), the
// review the protocol requires, or, for a bridge that points agents at
// guidance files no store recorded (guidance), the review of those. Material
// that no longer matches the record makes the record one awaiting review.
// Nothing is rewritten either way.
func adoptHarness(root *adapters.ProjectRoot, id string, rec adapters.Record, guidance []adapters.Finding) (*Outcome, error) {
	a, ok := adapters.Lookup(id)
	if !ok {
		return nil, fmt.Errorf("unknown harness %q", id)
	}
	o := &Outcome{Adapter: a, From: fsm.Initial, State: fsm.Initial, record: rec, ChangedPaths: []string{}, Recognized: true}
	contract := adapters.ContractOf(rec)
	if !a.Publishes() {
		// A record for a guidance-only adapter proves nothing here.
		o.Kind, o.Reason, o.Paths = Review, adapters.ReasonAdapterChanged, uniq(rec.Paths())
		o.NextStep = NextFor(a, fsm.Unsupported, false)
		return o, o.requireReview(o.Reason, o.Paths, &contract)
	}
	disk, changed, err := adapters.DiskRecord(root, id, rec)
	if err != nil {
		return nil, err
	}
	o.recomputed = disk.BridgeFingerprint
	if len(changed) > 0 || disk.BridgeFingerprint != rec.BridgeFingerprint {
		if len(changed) == 0 {
			changed = preflight.ChangedPaths(rec, disk, nil)
		}
		o.Kind, o.Reason, o.Paths = Review, adapters.ReasonBridgeFileChanged, uniq(changed)
		o.NextStep = NextReview(id) + " Changed on disk since the activation manifest was written: " + strings.Join(o.Paths, ", ") + "."
		return o, o.requireReview(o.Reason, o.Paths, &contract)
	}
	o.Kind = Publish
	if err := o.publish(); err != nil {
		return nil, err
	}
	switch {
	case len(guidance) > 0 && a.PointsAtGuidance():
		o.Kind, o.Reason = Review, adapters.ReasonForeignGuidance
		for _, f := range guidance {
			o.Paths = append(o.Paths, f.Path)
		}
		o.findings = guidance
		o.NextStep = GuidanceNext(guidance)
		return o, o.requireReview(o.Reason, o.Paths, nil)
	case !preflight.Current(a, rec):
		o.Kind, o.Reason, o.Paths = Review, adapters.ReasonAdapterChanged, uniq(rec.Paths())
		o.NextStep = NextStale
		return o, o.requireReview(o.Reason, o.Paths, nil)
	case a.PassiveBinding && !preflight.PassiveBinding(rec):
		o.Kind, o.Reason, o.Paths = Review, adapters.ReasonAdapterChanged, uniq(rec.Paths())
		o.NextStep = NextReview(id)
		return o, o.requireReview(o.Reason, o.Paths, nil)
	case foreignHooks(root, a, rec):
		o.Kind, o.Reason, o.Paths = Review, ReasonForeignHooks, []string{rec.BridgePath}
		o.NextStep = NextForeignHooks(id, rec.BridgePath)
		return o, o.requireReview(o.Reason, o.Paths, nil)
	}
	o.NextStep = NextFor(a, o.State, false)
	return o, nil
}

// foreignHooks reports whether rec's JSON hook file runs a command other
// than Tree Ring's hook (adapters.HookFileForeign), or cannot be read:
// nothing vouches for it then.
func foreignHooks(root *adapters.ProjectRoot, a *adapters.Adapter, rec adapters.Record) bool {
	if !a.JSONHookFile() {
		return false
	}
	foreign, err := adapters.HookFileForeign(root, rec.BridgePath, a.ID)
	return foreign || err != nil
}

// ReasonForeignHooks is the review of a record adopted from disk whose
// hook file runs commands besides Tree Ring's hook: no store here has
// reviewed them.
const ReasonForeignHooks = "foreign_hooks"

// NextForeignHooks is the step of a harness whose hook file, found before
// this store recorded its bridge, runs other commands too.
func NextForeignHooks(id, path string) string {
	return path + " runs hook commands besides Tree Ring's, and no store here has reviewed them (a clone can ship a hostile hook beside Tree Ring's): review every hook in " +
		path + ", then run `tree-ring init` and `tree-ring integrations reconcile --harness " + id + " --apply`, which publishes the reviewed bridge."
}

// Recomputed is the bridge fingerprint recomputed from the bytes on disk
// at adoption ("" when the record was not adopted from disk).
func (o *Outcome) Recomputed() string { return o.recomputed }

// adoptReceipts records each scanned receipt file as receipt.foreign:
// data the ledger keeps (so that nothing removes the file as a stray) and
// never proof. One that passes the eight rules while the harness rests in
// a state preflight may prove from is ForeignOtherWriter: another writer
// recorded it, not a preflight of this store, and a clone can forge one
// for a predictable project root (docs/adoption.md); every other one names
// why it fails.
func (o *Outcome) adoptReceipts(scan []ScannedReceipt) {
	for i := range scan {
		r := &scan[i]
		reason := events.ForeignOtherWriter
		switch {
		case r.Err != nil:
			reason = foreignReason(r.Err)
		case !preflight.Eligible(o.Adapter.ID, o.State):
			r.Err, reason = errIneligible, events.ForeignIneligible
		default:
			r.verified = true
		}
		o.add(o.Adapter, events.TypeReceiptForeign, &events.ReceiptForeign{
			HarnessID: o.Adapter.ID, ReceiptID: r.ReceiptID, Path: r.Path, SHA256: r.SHA256, Reason: reason,
		})
	}
}

var (
	errIneligible = errors.New("the harness's adopted state cannot be proven by a receipt")
	errMisplaced  = errors.New("the receipt's directory or file name disagrees with its content")
)

func foreignReason(err error) string {
	var re *receipt.Error
	switch {
	case errors.Is(err, errMisplaced):
		return events.ForeignMisplaced
	case errors.As(err, &re) && re.Rule >= 1 && re.Rule <= 8:
		return fmt.Sprintf("%s%d", events.ForeignRulePrefix, re.Rule)
	}
	return events.ForeignMalformed
}

// ScannedReceipt is one receipt file under a harness's receipt directory.
type ScannedReceipt struct {
	Path      string // project-relative
	ReceiptID string // from the file name
	SHA256    string // of the file's bytes
	Receipt   receipt.Receipt
	// Err is why the receipt proves nothing: malformed, misplaced, or a
	// *receipt.Error of the eight rules; nil for a verified one.
	Err      error
	verified bool // passed the eight rules while its harness could be proven
}

// ScanReceipts reads every receipt file of harness id
// (.tree-ring/activation/receipts/<id>/<worker>/receipt-<uuid>.json) and
// checks it: strictly decoded, in the directory its harness and agent
// profile name and the file its receipt id names, and verified with the
// protocol's eight rules (preflight.Verify) against m, the bridge
// fingerprint recomputed from disk and now. Entries that are not receipt
// file names are not receipts and are skipped. The result is in the order
// proofs are adopted: recorded_at, then receipt id (unparseable ones
// first). At most limit files are read; more is ErrAdoptTooLarge.
func ScanReceipts(root *adapters.ProjectRoot, m adapters.Manifest, id, recomputed string, now time.Time, limit int) ([]ScannedReceipt, error) {
	dir := receipt.Dir + "/" + id
	workers, absent, err := root.ListDir(dir, maxAdoptDirEntries)
	if err != nil || absent {
		return nil, adoptListErr(err)
	}
	var out []ScannedReceipt
	for _, w := range workers {
		wdir := dir + "/" + w
		names, absent, err := root.ListDir(wdir, maxAdoptDirEntries)
		var nd *adapters.NotDirError
		if errors.As(err, &nd) || absent {
			continue // a file beside the worker directories is not a receipt
		}
		if err != nil {
			return nil, adoptListErr(err)
		}
		for _, n := range names {
			rid, ok := strings.CutSuffix(n, ".json")
			if !ok || !receipt.ValidID(rid) {
				continue
			}
			if len(out) == limit {
				return nil, ErrAdoptTooLarge
			}
			out = append(out, scanOne(root, m, id, w, wdir+"/"+n, rid, recomputed, now))
		}
	}
	slices.SortStableFunc(out, func(a, b ScannedReceipt) int {
		if c := strings.Compare(a.Receipt.RecordedAt, b.Receipt.RecordedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ReceiptID, b.ReceiptID)
	})
	return out, nil
}

func adoptListErr(err error) error {
	var tl *adapters.TooLargeError
	if errors.As(err, &tl) {
		return ErrAdoptTooLarge
	}
	if err != nil {
		return fmt.Errorf("list receipts: %w", err)
	}
	return nil
}

func scanOne(root *adapters.ProjectRoot, m adapters.Manifest, id, worker, path, rid, recomputed string, now time.Time) ScannedReceipt {
	s := ScannedReceipt{Path: path, ReceiptID: rid}
	f, err := root.ReadFile(path, receipt.MaxBytes)
	switch {
	case err != nil:
		s.Err = fmt.Errorf("read receipt: %w", err)
		return s
	case !f.Exists:
		s.Err = errors.New("receipt vanished")
		return s
	}
	s.SHA256 = adapters.SHA256Hex(f.Data)
	r, err := receipt.Decode(f.Data)
	if err != nil {
		s.Err = err
		return s
	}
	s.Receipt = r
	if r.HarnessID != id || r.ReceiptID != rid || adapters.SHA256Hex([]byte(r.Session.AgentProfile)) != worker {
		s.Err = errMisplaced
		return s
	}
	s.Err = preflight.Verify(r, m, id, recomputed, now)
	return s
}

// checkUnadoptedDisk is AssessUnadopted's check of the files on disk: the
// bridge recomputed from them matches rec, and its JSON hook file runs no
// command besides Tree Ring's hook; else needs-user-review.
func (s Status) checkUnadoptedDisk(a *adapters.Adapter, rec adapters.Record, live Live) (Status, bool) {
	if _, ok := s.checkBridge(a, rec, live); !ok {
		return s, false
	}
	if a.JSONHookFile() && live.ForeignHooks(rec) {
		return s.set(fsm.NeedsUserReview, NextForeignHooks(a.ID, rec.BridgePath)), false
	}
	return s, true
}

// NextAdopt is the step of a harness whose manifest record is not adopted
// yet: the project was initialized by another Tree Ring writer, or it is a
// clone that brought another machine's .tree-ring. Its receipt files are
// not read as proof (docs/adoption.md).
const NextAdopt = "Receipts from another store or machine are not proof: run `tree-ring init` to adopt this project's activation manifest into the ledger (its store id is kept and no file is rewritten), then open a new harness session."

// AssessUnadopted is the status rule before adoption: the project has an
// activation manifest (condition e.Manifest) but no ledger, as the Rust
// Tree Ring leaves it. The protocol's rule runs on the manifest on disk:
//
//   - a guidance-only adapter: unsupported;
//   - no valid manifest, or no record for the harness: the initial state,
//     run init (which adopts, or refuses to replace, the manifest);
//   - a plugin-proven harness without a valid live descriptor: needs-plugin;
//   - a guidance file the bridge points agents at that no store recorded
//     (nothing is recorded before init): needs-user-review, its repair;
//   - a record that is not this CLI's current definition (adapter version
//     3 Codex or Claude Code hooks), or a passive binding that is not the
//     exact binding: needs-user-review;
//   - material on disk that no longer matches the record: needs-user-review;
//   - a JSON hook file that runs commands besides Tree Ring's hook (a
//     clone's hostile hook beside Tree Ring's entries, which the record's
//     block digest does not cover): needs-user-review;
//   - else the record's state, a proven one mapped back to
//     configured-awaiting-proof: the receipt files on disk are another
//     writer's (or a clone's forgery), never proof here.
//
// A state that init adopts as it is gets NextAdopt as its step.
func AssessUnadopted(e Evidence, live Live) Status {
	a := e.Adapter
	var s Status
	switch {
	case a.Support == adapters.Unsupported:
		return s.set(fsm.Unsupported, NextFor(a, fsm.Unsupported, false))
	case e.Manifest != ManifestPresent || e.Record == nil:
		return s.set(fsm.Initial, NextInit)
	}
	if a.PluginDescriptor {
		if err := live.Plugin(); err != nil {
			s.Plugin = err.Error()
			return s.set(fsm.NeedsPlugin, NextNeedsPlugin)
		}
	}
	if st, foreign := s.onGuidance(a, live); foreign {
		return st
	}
	rec := *e.Record
	if !preflight.Current(a, rec) {
		s.Bridge = BridgeStale
		return s.set(fsm.NeedsUserReview, NextStale)
	}
	if a.PassiveBinding && !preflight.PassiveBinding(rec) {
		return s.set(fsm.NeedsUserReview, NextReview(a.ID))
	}
	s, ok := s.checkUnadoptedDisk(a, rec, live)
	if !ok {
		return s
	}
	st := fsm.State(rec.State)
	if fsm.Proven(st) || a.PluginDescriptor {
		st = fsm.ConfiguredAwaitingProof
	}
	switch st {
	case fsm.ConfiguredAwaitingProof, fsm.NeedsTrust:
		return s.set(st, NextAdopt)
	}
	return s.set(st, NextFor(a, st, false))
}
