package activation

import (
	"errors"
	"strings"
	"sync"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/fsm"
)

// Conditions of the activation manifest on disk, as status reports them.
const (
	ManifestPresent  = "present"
	ManifestMissing  = "missing"
	ManifestInvalid  = "invalid"
	ManifestMismatch = "mismatch" // another project root or another store than the ledger's
	// ManifestMoved: the ledger and the manifest (if any) name the same
	// other root: the project was moved or copied here (moved.go).
	ManifestMoved = "moved"
)

// Bridge conditions status reports.
const (
	BridgeMatch   = "match"
	BridgeChanged = "changed"
	BridgeStale   = "stale"
)

// NextInit is the step of a harness in a project without a store.
const NextInit = "Run `tree-ring init` to create the project store and publish the detected harnesses' bridges."

// NextInitUnfinished is the step of a harness in a store that init made
// but did not finish (nothing was published: it failed, or was killed).
const NextInitUnfinished = "`tree-ring init` made the store but did not finish (nothing is published yet); fix what it reported and run `tree-ring init` again."

// NextActivate is the step of a harness nothing has been published for.
func NextActivate(id string) string {
	return "Run `tree-ring integrations activate --harness " + id + "` to publish its bridge, then open a new session."
}

// Evidence is the recorded side of one harness's status: what the ledger
// and the manifest on disk say, read before the rule runs.
type Evidence struct {
	Adapter  *adapters.Adapter
	Ledger   bool   // the project has a ledger
	Manifest string // the manifest on disk: ManifestPresent, ...
	// Record is the harness's record in the manifest on disk (nil: the
	// manifest is not present or has none).
	Record *adapters.Record
	Events bool // the harness stream has events
	// LedgerState is the FSM state at the instant (the recorded state with
	// the 30-day receipt expiry).
	LedgerState fsm.State
	// LedgerRecord is the ledger's manifest record (nil: none).
	LedgerRecord *events.BridgeRecord
	// LedgerDiagnostic is the failed preflight's diagnostic code while
	// the recorded state is failed, the review's reason while it is
	// needs-user-review.
	LedgerDiagnostic string
	// Published: the store has published a manifest (manifest.published):
	// an init that made the store but stopped before publishing has not.
	Published bool
	// NotProofHere: the receipts the harness stream holds were adopted
	// from another writer or brought by an events import
	// (fsm.History.NotProofHere), so none proves it here.
	NotProofHere bool
}

// Live is the evidence status reads from outside the ledger, only when
// the rule reaches it (it costs file reads).
type Live interface {
	// Plugin is the refusal of the live plugin descriptor, nil when it is
	// valid (asked only of a harness with PluginDescriptor).
	Plugin() error
	// Bridge recomputes rec's bridge from the bytes on disk: the
	// fingerprint, the paths that differ, and an error when the material
	// cannot be read.
	Bridge(rec adapters.Record) (fingerprint string, changed []string, err error)
	// NewestReceipt is the newest retained receipt since the harness last
	// entered the proven states that passes the eight verification rules
	// against the recomputed bridge fingerprint.
	NewestReceipt(recomputed string) Found
	// Program is the installed program's refusal (an
	// *adapters.ProgramError: missing, not executable, an unsafe mode,
	// differs from the recorded digest; or, with none recorded, a file
	// that is not the running build: adapters.ProgramForeign), nil when it
	// is the recorded one, or none is recorded and none (or the running
	// build) is there. Every bridge runs the same file, so a caller may
	// compute it once for all harnesses.
	Program() error
	// Trust is the host's own trust verdict for the project, read
	// read-only, asked only of a harness whose TrustGate can be inspected
	// (Codex, Gemini CLI, Pi).
	Trust() adapters.Trust
	// HooksOff is the host's own switch of its hooks, read read-only,
	// asked only of a harness with a HooksSwitch (Claude Code).
	HooksOff() adapters.HooksOff
	// ForeignGuidance are the guidance files under .tree-ring that the
	// store did not record (Guidance), asked only of a harness whose
	// bridge points agents at them.
	ForeignGuidance() []adapters.Finding
	// ForeignHooks reports whether rec's JSON hook file runs commands
	// besides Tree Ring's hook (adapters.HookFileForeign), asked only
	// before adoption.
	ForeignHooks(rec adapters.Record) bool
}

// Found is the receipt search's result.
type Found struct {
	Receipt  *receipt.Receipt // nil: no valid receipt
	Age      int64            // seconds since the receipt's recorded_at
	Rejected int              // receipts looked at and rejected before it
}

// Status is one harness's state, its next step, and the evidence that
// decided it.
type Status struct {
	State      fsm.State
	Next       string
	Bridge     string   // "", BridgeMatch, BridgeChanged, BridgeStale
	Recomputed string   // the bridge fingerprint on disk, when inspected
	Changed    []string // paths that differ on disk, when inspected
	Plugin     string   // the descriptor's refusal, for a plugin-proven harness
	// Diagnostic is the code of a failed state: the failed preflight's
	// (recorded), or what status found live (the installed program, a
	// host's unreadable trust settings).
	Diagnostic string
	Found
}

// Unreachable is the status of a plugin-proven harness (Agent Zero) whose
// descriptor-scoped call cannot reach the bound project root at all (the
// directory does not exist in the harness's runtime: a container without
// the mount): needs-plugin when the live descriptor is refused (pluginErr),
// else needs-project-mount. Nothing can be read or recorded there.
func Unreachable(a *adapters.Adapter, pluginErr error) Status {
	var s Status
	if pluginErr != nil {
		s.Plugin = pluginErr.Error()
		return s.set(fsm.NeedsPlugin, NextNeedsPlugin)
	}
	return s.set(fsm.NeedsProjectMount, NextMount)
}

// Listed reports whether status lists a harness: detected, recorded in the
// manifest on disk or the ledger, or proven by a plugin (which may be
// installed where no marker shows it).
func Listed(detected bool, e Evidence) bool {
	return detected || e.Record != nil || e.Events || e.Adapter.PluginDescriptor
}

// Assess is the status rule: the recorded state plus live evidence give
// one of the nine states and the next step.
//
//   - no ledger: unsupported (the initial state), run init;
//   - a guidance-only adapter: unsupported;
//   - a plugin-proven harness without a valid live descriptor: needs-plugin;
//   - nothing published or recorded: the initial state, activate, or init
//     again when the store has published nothing at all (a failed init);
//   - needs-user-review while a program this store did not install, and
//     that is not the running build, stands where the bridge would run it
//     (adapters.ProgramForeign), with the step that moves it aside;
//   - needs-user-review while a guidance file the bridge points agents at
//     is not one this store recorded (adapters.ReasonForeignGuidance),
//     with the step that moves it aside;
//   - the ledger's blocked states (needs-user-review, needs-trust,
//     failed, needs-project-mount, unsupported, and needs-plugin for a
//     harness no plugin proves) stand as recorded, except that a stale
//     record or a changed bridge is needs-user-review;
//   - needs-user-review when the manifest on disk is missing, invalid,
//     names another root or store, has no record, its record differs from
//     the ledger's, is stale, is not the passive binding a passive harness
//     must publish, or the bridge recomputed from disk differs;
//   - failed when the installed program every bridge runs is missing, not
//     executable, not the recorded build, or it or its directory is
//     writable by group or others or it is setuid or setgid (with its
//     repair);
//   - the ledger's blocked states stand;
//   - needs-trust while a host whose trust can be read would skip the
//     bridge (a receipt cannot override it: the next session runs no
//     hook), failed when its settings cannot be read or parsed;
//   - needs-trust, with the adapter's step, while a harness whose host
//     trust gate Tree Ring can read (Gemini CLI, Pi) does not trust the
//     project, even with a receipt; that live decision also supersedes a
//     recorded needs-trust (Pi's resting state), so a host without the
//     gate or one that trusts the project is configured-awaiting-proof,
//     and where it cannot tell whether the host gates the project (Pi's
//     version unreadable) a valid receipt stands, else needs-trust;
//   - configured-awaiting-proof, with the step that switches them back
//     on, while the host's own settings switch its hooks off (Claude
//     Code's disableAllHooks), even with a receipt; failed when those
//     settings cannot be read or parsed;
//   - for a proven FSM state, the state of the newest valid receipt, else
//     configured-awaiting-proof.
func Assess(e Evidence, live Live) Status {
	a := e.Adapter
	switch {
	case !e.Ledger:
		return Status{State: fsm.Initial, Next: NextInit}
	case a.Support == adapters.Unsupported:
		return Status{State: fsm.Unsupported, Next: NextFor(a, fsm.Unsupported, false)}
	}
	var s Status
	if a.PluginDescriptor {
		if err := live.Plugin(); err != nil {
			s.Plugin = err.Error()
			return s.set(fsm.NeedsPlugin, NextNeedsPlugin)
		}
	}
	if !e.Events && e.Record == nil {
		if !e.Published {
			return s.set(fsm.Initial, NextInitUnfinished)
		}
		return s.set(fsm.Initial, NextActivate(a.ID))
	}
	program := sync.OnceValue(live.Program)
	if st, foreign := s.onForeign(a, live, program); foreign {
		return st
	}
	if st, done := s.onRecord(e); done {
		return st
	}
	fp, ok := s.checkBridge(a, *e.Record, live)
	if !ok {
		return s
	}
	if err := program(); err != nil && !foreign(err) {
		var pe *adapters.ProgramError
		if errors.As(err, &pe) {
			s.Diagnostic = pe.Code
		}
		return s.set(fsm.Failed, sentence(err.Error()))
	}
	if blocked(e) {
		return s.recorded(e)
	}
	return s.onHost(e, live, fp)
}

// onForeign is needs-user-review, whatever the ledger says, for a bridge
// that would run a program this store never installed (init and activate
// publish none), or point agents at guidance it did not record.
func (s Status) onForeign(a *adapters.Adapter, live Live, program func() error) (Status, bool) {
	if a.RunsProgram() && foreign(program()) {
		s.Diagnostic = adapters.ProgramForeign
		return s.set(fsm.NeedsUserReview, sentence(program().Error())), true
	}
	return s.onGuidance(a, live)
}

// onGuidance is the check, before and after init, of the guidance files a
// bridge points agents at: needs-user-review, naming each file this store
// did not record and its repair, whatever the ledger says.
func (s Status) onGuidance(a *adapters.Adapter, live Live) (_ Status, foreign bool) {
	if !a.PointsAtGuidance() {
		return s, false
	}
	fg := live.ForeignGuidance()
	if len(fg) == 0 {
		return s, false
	}
	s.Diagnostic = adapters.ReasonForeignGuidance
	return s.set(fsm.NeedsUserReview, GuidanceNext(fg)), true
}

// onRecord is Assess's check of the harness's record in the manifest on
// disk against the adapter and the ledger: done with needs-user-review (or
// the ledger's blocked state) when it is missing, stale, differs or is not
// the passive binding it must be.
func (s Status) onRecord(e Evidence) (_ Status, done bool) {
	a := e.Adapter
	if e.Manifest == ManifestMoved {
		// Nothing recorded at the old root proves anything here.
		return s.set(fsm.NeedsUserReview, NextMoved), true
	}
	if e.Manifest != ManifestPresent || e.Record == nil {
		if blocked(e) {
			return s.recorded(e), true
		}
		return s.set(fsm.NeedsUserReview, NextReview(a.ID)+" "+manifestWhy(e)+"."), true
	}
	rec := *e.Record
	if !preflight.Current(a, rec) {
		s.Bridge = BridgeStale
		return s.set(fsm.NeedsUserReview, NextStale), true
	}
	if lr := e.LedgerRecord; lr == nil || !lr.Published || !adapters.RecordOf(lr.Contract).Equal(rec) {
		if blocked(e) {
			return s.recorded(e), true
		}
		return s.set(fsm.NeedsUserReview, NextReview(a.ID)+" Its record in "+adapters.ManifestPath+" differs from the ledger's."), true
	}
	if a.PassiveBinding && !preflight.PassiveBinding(rec) {
		return s.set(fsm.NeedsUserReview, NextReview(a.ID)), true
	}
	return s, false
}

// onHost is Assess's last part, for a harness whose bridge and program are
// ours and whose ledger state is not blocked: the host's own trust and
// hooks switch, read live, then the newest valid receipt (fp: the bridge
// fingerprint recomputed from disk).
func (s Status) onHost(e Evidence, live Live, fp string) Status {
	a := e.Adapter
	var gateUnknown *adapters.Trust
	if g := a.TrustGate; g != nil && g.Inspect != nil {
		// While the host would skip the project's hooks, no receipt is
		// new evidence: the host's own decision, read live.
		switch t := live.Trust(); {
		case t.Diagnostic != "":
			s.Diagnostic = t.Diagnostic
			return s.set(fsm.Failed, t.Next)
		case t.Unknown:
			gateUnknown = &t
		case !t.Granted:
			return s.set(fsm.NeedsTrust, t.Next)
		}
	}
	if a.HooksSwitch != nil {
		// The host runs no hook at all: no receipt, old or new, is proof.
		switch off := live.HooksOff(); {
		case off.Diagnostic != "":
			s.Diagnostic = off.Diagnostic
			return s.set(fsm.Failed, off.Next)
		case off.File != "":
			return s.set(fsm.ConfiguredAwaitingProof, off.Next)
		}
	}
	if fsm.Proven(e.LedgerState) {
		s.Found = live.NewestReceipt(fp)
	}
	if s.Receipt != nil {
		// (Where Tree Ring cannot tell whether the host gates the project,
		// the receipt shows the host ran the bridge.)
		st := fsm.State(s.Receipt.State)
		return s.set(st, NextFor(a, st, false))
	}
	if gateUnknown != nil {
		return s.set(fsm.NeedsTrust, gateUnknown.Next)
	}
	if e.NotProofHere {
		return s.set(fsm.ConfiguredAwaitingProof, NextNotProof(a.Name))
	}
	return s.set(fsm.ConfiguredAwaitingProof, NextAwaitingProof(a.Name))
}

// checkBridge recomputes rec's bridge from disk into s: the fingerprint
// and true when it matches rec, else s becomes needs-user-review naming the
// changed paths.
func (s *Status) checkBridge(a *adapters.Adapter, rec adapters.Record, live Live) (string, bool) {
	fp, changed, err := live.Bridge(rec)
	s.Recomputed, s.Changed = fp, changed
	if err != nil || fp != rec.BridgeFingerprint {
		s.Bridge = BridgeChanged
		next := NextReview(a.ID)
		if len(changed) > 0 {
			next += " Changed on disk: " + strings.Join(changed, ", ") + "."
		}
		*s = s.set(fsm.NeedsUserReview, next)
		return fp, false
	}
	s.Bridge = BridgeMatch
	return fp, true
}

func (s Status) set(st fsm.State, next string) Status {
	s.State, s.Next = st, next
	return s
}

// recorded keeps the ledger's blocked state (a failed one with its
// diagnostic).
func (s Status) recorded(e Evidence) Status {
	if e.LedgerState == fsm.Failed && e.LedgerDiagnostic != "" {
		s.Diagnostic = e.LedgerDiagnostic
		return s.set(fsm.Failed, NextFailedWith(e.Adapter, e.LedgerDiagnostic))
	}
	if e.LedgerState == fsm.NeedsUserReview && e.LedgerDiagnostic == ReasonForeignHooks && e.Record != nil {
		return s.set(fsm.NeedsUserReview, NextForeignHooks(e.Adapter.ID, e.Record.BridgePath))
	}
	return s.set(e.LedgerState, NextFor(e.Adapter, e.LedgerState, false))
}

// blocked reports whether the ledger's state stands whatever the files
// say: anything but the states preflight proves from and, for a harness a
// plugin proves, needs-plugin.
func blocked(e Evidence) bool {
	switch e.LedgerState {
	case fsm.ConfiguredAwaitingProof, fsm.Active, fsm.ActiveIsolated:
		return false
	case fsm.NeedsPlugin:
		return !e.Adapter.PluginDescriptor
	case fsm.NeedsTrust:
		g := e.Adapter.TrustGate // a live decision that supersedes it is read instead
		return g == nil || g.Inspect == nil || !g.Supersedes
	}
	return true
}

func manifestWhy(e Evidence) string {
	switch e.Manifest {
	case ManifestPresent:
		return adapters.ManifestPath + " has no record for this harness"
	case ManifestMismatch:
		return adapters.ManifestPath + " names another project root or store"
	}
	return adapters.ManifestPath + " is " + e.Manifest
}

// foreign reports whether err is a program this store did not install
// (which concerns only a bridge that runs it).
func foreign(err error) bool {
	var pe *adapters.ProgramError
	return errors.As(err, &pe) && pe.Code == adapters.ProgramForeign
}

// sentence capitalizes an error message and ends it with a full stop.
func sentence(msg string) string {
	if msg == "" {
		return msg
	}
	return strings.ToUpper(msg[:1]) + msg[1:] + "."
}
