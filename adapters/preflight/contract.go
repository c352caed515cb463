package preflight

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

// Contract refusals, with the published wording.
var (
	ErrRootMismatch   = errors.New("project root mismatch: the project was moved or copied here; run `tree-ring integrations reconcile --apply` to record the move")
	ErrNoRecord       = errors.New("harness has no activation record; run `tree-ring init` first")
	ErrStale          = errors.New("stale adapter version or bridge fingerprint")
	ErrNotEligible    = errors.New("harness activation state is not eligible for preflight")
	ErrNotPassive     = errors.New("the Agent Zero manifest record is not the exact passive binding")
	ErrIsolatedRoots  = errors.New("isolated preflight roots are invalid")
	ErrLedgerMismatch = errors.New("the activation manifest differs from the ledger; run `tree-ring integrations status --verbose`")
	// ErrProjectUnreachable: a plugin's preflight whose bound project root
	// does not exist in the harness's runtime (needs-project-mount).
	ErrProjectUnreachable = errors.New("needs-project-mount: the bound project root is not reachable from this runtime; make the canonical project root reachable from the harness runtime, then start a new session")
)

// BridgeChangedError reports bridge material on disk that no longer
// matches the manifest record (a tampered or removed hook file).
type BridgeChangedError struct{ Paths []string }

func (e *BridgeChangedError) Error() string {
	if len(e.Paths) == 0 {
		return "the installed bridge differs from the activation manifest"
	}
	return "the installed bridge differs from the activation manifest: " + strings.Join(e.Paths, ", ")
}

// Diagnostic is the run diagnostic of a hook that found its bridge changed.
func (e *BridgeChangedError) Diagnostic() string { return "bridge_changed" }

// Checked is a harness's verified activation contract.
type Checked struct {
	Adapter *adapters.Adapter
	Record  adapters.Record
	// Recomputed is the bridge fingerprint recomputed from the bytes on
	// disk (equal to Record.BridgeFingerprint when Check succeeded).
	Recomputed string
	Changed    []string
}

// Check verifies harness a's activation contract under root: the manifest
// names this project (its fingerprint is projectFP), it has a record for
// the harness, the record states the registry's adapter version and
// capability and a bridge fingerprint consistent with its own digests, and
// the bridge fingerprint recomputed from the bytes on disk is the record's.
// The checked contract is returned even on a bridge mismatch (with a
// *BridgeChangedError) so that status can report it.
func Check(root *adapters.ProjectRoot, m adapters.Manifest, a *adapters.Adapter, projectFP string) (Checked, error) {
	c := Checked{Adapter: a}
	if m.ProjectRootFingerprint != projectFP {
		return c, ErrRootMismatch
	}
	rec, ok := m.Harnesses[a.ID]
	if !ok {
		return c, ErrNoRecord
	}
	c.Record = rec
	if !currentAdapter(a, rec) {
		return c, ErrStale
	}
	disk, changed, err := adapters.DiskRecord(root, a.ID, rec)
	// DiskRecord fingerprints the digests it read; when they are the
	// record's own, that is the fingerprint Current would recompute from
	// the record, so the bridge is hashed once. Otherwise (or when the
	// disk could not be read) Current decides first, as it always has.
	if err == nil && slices.Equal(disk.OwnedFiles, rec.OwnedFiles) && slices.Equal(disk.ManagedBlocks, rec.ManagedBlocks) {
		if disk.BridgeFingerprint != rec.BridgeFingerprint {
			return c, ErrStale
		}
	} else if !Current(a, rec) {
		return c, ErrStale
	}
	if err != nil {
		return c, fmt.Errorf("inspect the %s bridge: %w", a.ID, err)
	}
	c.Recomputed, c.Changed = disk.BridgeFingerprint, ChangedPaths(rec, disk, changed)
	if disk.BridgeFingerprint != rec.BridgeFingerprint {
		return c, &BridgeChangedError{Paths: c.Changed}
	}
	return c, nil
}

// ChangedPaths lists the paths whose material on disk (disk, from
// adapters.DiskRecord, with its missing paths) differs from the record,
// sorted and unique.
func ChangedPaths(rec, disk adapters.Record, missing []string) []string {
	out := slices.Clone(missing)
	for _, f := range rec.OwnedFiles {
		if !slices.Contains(disk.OwnedFiles, f) && !slices.Contains(out, f.Path) {
			out = append(out, f.Path)
		}
	}
	for _, b := range rec.ManagedBlocks {
		if !slices.Contains(disk.ManagedBlocks, b) && !slices.Contains(out, b.Path) {
			out = append(out, b.Path)
		}
	}
	slices.Sort(out)
	return out
}

// Current reports whether a manifest record states the registry's adapter
// version and capability and a bridge fingerprint that its own files and
// blocks produce (the stale-adapter check).
func Current(a *adapters.Adapter, rec adapters.Record) bool {
	return currentAdapter(a, rec) &&
		rec.BridgeFingerprint == adapters.BridgeFingerprint(a.ID, rec.AdapterVersion, rec.OwnedFiles, rec.ManagedBlocks)
}

// currentAdapter is Current without the fingerprint's recomputation.
func currentAdapter(a *adapters.Adapter, rec adapters.Record) bool {
	return rec.AdapterVersion == a.Version && rec.AdapterCapability == string(a.Capability) && rec.BridgeFingerprint != ""
}

// Eligible reports whether a harness in state s may run preflight: the
// published configured-awaiting-proof, active and active-isolated, failed
// (a failed preflight stands until the next one succeeds), plus
// needs-trust for a harness behind a trust gate and needs-plugin for one a
// separate plugin proves (Agent Zero, whose resting state is needs-plugin
// until its plugin proves it).
func Eligible(harness string, s fsm.State) bool {
	switch s {
	case fsm.ConfiguredAwaitingProof, fsm.Active, fsm.ActiveIsolated, fsm.Failed:
		return true
	}
	a, ok := adapters.Lookup(harness)
	return ok && (s == fsm.NeedsTrust && a.TrustGate != nil || s == fsm.NeedsPlugin && a.PluginDescriptor)
}

// Admit refuses, before the ledger is opened, a harness that a plugin
// proves when there is no live descriptor, and a passive-binding harness
// whose record is anything but the exact binding.
func Admit(c Checked, plugin *Descriptor) error {
	if c.Adapter.PluginDescriptor && plugin == nil || c.Adapter.PassiveBinding && !PassiveBinding(c.Record) {
		return ErrNotPassive
	}
	return nil
}

// PassiveBinding reports whether rec is exactly Agent Zero's passive
// binding record: state needs-plugin, bridge path and single owned file
// .tree-ring/activation/agent-zero.json, no managed blocks.
func PassiveBinding(rec adapters.Record) bool {
	const binding = ".tree-ring/activation/agent-zero.json"
	return rec.State == string(fsm.NeedsPlugin) && rec.BridgePath == binding &&
		len(rec.OwnedFiles) == 1 && rec.OwnedFiles[0].Path == binding && len(rec.ManagedBlocks) == 0
}

// CheckProgram is the hook's check of the installed program every bridge
// runs against the ledger's record (nil: none recorded, nothing to check):
// the quick inspection of adapters.InspectProgram, which hashes the file
// only when its size matches and its identity (inode, mtime, ctime) is not
// the recorded one. A refusal is an *adapters.ProgramError naming the
// repair; no receipt is written.
func CheckProgram(root *adapters.ProjectRoot, rec *events.ProgramIdentity) error {
	if rec == nil {
		return nil
	}
	_, _, err := adapters.InspectProgram(root, *rec, false)
	return err
}
