package activation_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/activation"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/fsm"
)

// fakeLive is the live evidence of one case; it records what the rule
// asked for, so a case can assert the rule did not read more than it must.
type fakeLive struct {
	plugin   error
	fp       string // "" means: the record's own fingerprint (a match)
	changed  []string
	bridge   error
	found    activation.Found
	asked    []string
	recorded string
	program  error
	trust    *adapters.Trust // nil: granted
	host     adapters.TrustDecision
	hooksOff adapters.HooksOff
	a        *adapters.Adapter // for host: its steps
	guidance []adapters.Finding
	hooks    bool
}

func (f *fakeLive) Program() error { f.asked = append(f.asked, "program"); return f.program }

func (f *fakeLive) Trust() adapters.Trust {
	f.asked = append(f.asked, "trust")
	if f.host != 0 {
		return adapters.TrustFromDecision(f.host, f.a.TrustStep)
	}
	if f.trust == nil {
		return adapters.Trust{Granted: true}
	}
	return *f.trust
}

func (f *fakeLive) HooksOff() adapters.HooksOff {
	f.asked = append(f.asked, "hooks")
	return f.hooksOff
}

func (f *fakeLive) ForeignGuidance() []adapters.Finding { return f.guidance }

func (f *fakeLive) ForeignHooks(adapters.Record) bool { return f.hooks }

func (f *fakeLive) Plugin() error { f.asked = append(f.asked, "plugin"); return f.plugin }

func (f *fakeLive) Bridge(rec adapters.Record) (string, []string, error) {
	f.asked = append(f.asked, "bridge")
	if f.fp == "" {
		return rec.BridgeFingerprint, nil, f.bridge
	}
	return f.fp, f.changed, f.bridge
}

func (f *fakeLive) NewestReceipt(recomputed string) activation.Found {
	f.asked = append(f.asked, "receipt")
	f.recorded = recomputed
	return f.found
}

func lookup(t testing.TB, id string) *adapters.Adapter {
	t.Helper()
	a, ok := adapters.Lookup(id)
	if !ok {
		t.Fatalf("no adapter %s", id)
	}
	return a
}

// current is a's record as it publishes it: current, with a consistent
// bridge fingerprint.
func current(a *adapters.Adapter) *adapters.Record {
	r := a.Record(a.Material(adapters.Context{StoreID: "00000000-0000-4000-8000-000000000000"}))
	return &r
}

func TestAssessEveryState(t *testing.T) {
	codex, az, goose := lookup(t, "codex"), lookup(t, "agent-zero"), lookup(t, "goose")
	rec := current(codex)
	stale := *rec
	stale.AdapterVersion = "0"
	azRec := current(az)
	azNotPassive := *azRec
	azNotPassive.State = string(fsm.Active)
	other := *rec
	other.BridgePath = "elsewhere"
	published := func(r *adapters.Record) *events.BridgeRecord {
		return &events.BridgeRecord{Contract: adapters.ContractOf(*r), Published: true}
	}
	// ok is the evidence of a codex bridge that matches everywhere.
	ok := func(ledger fsm.State) activation.Evidence {
		return activation.Evidence{Adapter: codex, Ledger: true, Manifest: activation.ManifestPresent, Record: rec,
			Events: true, LedgerState: ledger, LedgerRecord: published(rec)}
	}
	with := func(e activation.Evidence, f func(*activation.Evidence)) activation.Evidence { f(&e); return e }
	gemini := lookup(t, "gemini-cli")
	gemRec := current(gemini)
	gem := func(ledger fsm.State) activation.Evidence {
		return activation.Evidence{Adapter: gemini, Ledger: true, Manifest: activation.ManifestPresent, Record: gemRec,
			Events: true, LedgerState: ledger, LedgerRecord: published(gemRec)}
	}
	pi := lookup(t, "pi")
	piRec := current(pi)
	piAt := func(ledger fsm.State) activation.Evidence {
		return activation.Evidence{Adapter: pi, Ledger: true, Manifest: activation.ManifestPresent, Record: piRec,
			Events: true, LedgerState: ledger, LedgerRecord: published(piRec)}
	}
	claude := lookup(t, "claude-code")
	claudeRec := current(claude)
	cc := func(ledger fsm.State) activation.Evidence {
		return activation.Evidence{Adapter: claude, Ledger: true, Manifest: activation.ManifestPresent, Record: claudeRec,
			Events: true, LedgerState: ledger, LedgerRecord: published(claudeRec)}
	}
	switchedOff := adapters.HooksOff{File: ".claude/settings.local.json", Next: "Claude Code runs no hook: switched off"}
	activeReceipt := &receipt.Receipt{ReceiptID: "receipt-a", State: string(fsm.Active)}
	isolatedReceipt := &receipt.Receipt{ReceiptID: "receipt-i", State: string(fsm.ActiveIsolated)}

	cases := []struct {
		name   string
		ev     activation.Evidence
		live   fakeLive
		state  fsm.State
		next   string // a prefix of the next step
		bridge string
		asked  string
	}{
		{"no ledger", activation.Evidence{Adapter: codex}, fakeLive{}, fsm.Unsupported, activation.NextInit, "", ""},
		{"guidance-only adapter", activation.Evidence{Adapter: goose, Ledger: true}, fakeLive{}, fsm.Unsupported, activation.NextUnsupported, "", ""},
		{"nothing published for it", activation.Evidence{Adapter: codex, Ledger: true, Manifest: activation.ManifestPresent, LedgerState: fsm.Initial, Published: true},
			fakeLive{}, fsm.Unsupported, activation.NextActivate("codex"), "", ""},
		// Issue 24 finding 10: after an init that made the store and
		// failed, the step is init again, not activate.
		{"a failed init published nothing", activation.Evidence{Adapter: codex, Ledger: true, Manifest: activation.ManifestMissing, LedgerState: fsm.Initial},
			fakeLive{}, fsm.Unsupported, activation.NextInitUnfinished, "", ""},
		{"plugin descriptor refused", activation.Evidence{Adapter: az, Ledger: true, Manifest: activation.ManifestPresent, Record: azRec, Events: true,
			LedgerState: fsm.NeedsPlugin, LedgerRecord: published(azRec)}, fakeLive{plugin: errors.New("no descriptor")}, fsm.NeedsPlugin, activation.NextNeedsPlugin, "", "plugin"},
		{"manifest missing", with(ok(fsm.Active), func(e *activation.Evidence) { e.Manifest, e.Record = activation.ManifestMissing, nil }),
			fakeLive{}, fsm.NeedsUserReview, activation.NextReview("codex") + " .tree-ring/activation.json is missing.", "", "program"},
		{"manifest names another store", with(ok(fsm.Active), func(e *activation.Evidence) { e.Manifest, e.Record = activation.ManifestMismatch, nil }),
			fakeLive{}, fsm.NeedsUserReview, activation.NextReview("codex") + " .tree-ring/activation.json names another project root or store.", "", "program"},
		{"manifest without the record", with(ok(fsm.ConfiguredAwaitingProof), func(e *activation.Evidence) { e.Record = nil }),
			fakeLive{}, fsm.NeedsUserReview, activation.NextReview("codex") + " .tree-ring/activation.json has no record for this harness.", "", "program"},
		{"failed stands without a manifest", with(ok(fsm.Failed), func(e *activation.Evidence) { e.Manifest, e.Record = activation.ManifestInvalid, nil }),
			fakeLive{}, fsm.Failed, activation.NextFailed, "", "program"},
		{"stale record", with(ok(fsm.Active), func(e *activation.Evidence) { e.Record = &stale }),
			fakeLive{}, fsm.NeedsUserReview, activation.NextStale, activation.BridgeStale, "program"},
		{"ledger record differs", with(ok(fsm.Active), func(e *activation.Evidence) { e.LedgerRecord = published(&other) }),
			fakeLive{}, fsm.NeedsUserReview, activation.NextReview("codex") + " Its record", "", "program"},
		{"ledger record unpublished, trust stands", with(ok(fsm.NeedsTrust), func(e *activation.Evidence) { e.LedgerRecord = nil }),
			fakeLive{}, fsm.NeedsTrust, codex.TrustStep(adapters.TrustUnknown), "", "program"},
		{"not the passive binding", activation.Evidence{Adapter: az, Ledger: true, Manifest: activation.ManifestPresent, Record: &azNotPassive, Events: true,
			LedgerState: fsm.NeedsPlugin, LedgerRecord: published(&azNotPassive)}, fakeLive{}, fsm.NeedsUserReview, activation.NextReview("agent-zero"), "", "plugin"},
		{"bridge changed on disk", ok(fsm.Active), fakeLive{fp: "changed", changed: []string{".codex/hooks.json"}},
			fsm.NeedsUserReview, activation.NextReview("codex") + " Changed on disk: .codex/hooks.json.", activation.BridgeChanged, "program bridge"},
		{"bridge unreadable", ok(fsm.Active), fakeLive{bridge: errors.New("denied")},
			fsm.NeedsUserReview, activation.NextReview("codex"), activation.BridgeChanged, "program bridge"},
		{"needs-trust stands", ok(fsm.NeedsTrust), fakeLive{}, fsm.NeedsTrust, codex.TrustStep(adapters.TrustUnknown), activation.BridgeMatch, "program bridge"},
		{"needs-project-mount stands", ok(fsm.NeedsProjectMount), fakeLive{}, fsm.NeedsProjectMount, activation.NextMount, activation.BridgeMatch, "program bridge"},
		{"needs-plugin is blocked for a harness no plugin proves", ok(fsm.NeedsPlugin), fakeLive{}, fsm.NeedsPlugin, activation.NextNeedsPlugin, activation.BridgeMatch, "program bridge"},
		{"awaiting proof", ok(fsm.ConfiguredAwaitingProof), fakeLive{}, fsm.ConfiguredAwaitingProof, activation.NextAwaitingProof("Codex"), activation.BridgeMatch, "program bridge trust hooks"},
		{"proven without a valid receipt", ok(fsm.Active), fakeLive{found: activation.Found{Rejected: 2}},
			fsm.ConfiguredAwaitingProof, activation.NextAwaitingProof("Codex"), activation.BridgeMatch, "program bridge trust hooks receipt"},
		{"program missing", ok(fsm.Active), fakeLive{program: &adapters.ProgramError{Code: adapters.ProgramMissing}},
			fsm.Failed, "The installed program .tree-ring/bin/tree-ring is missing", activation.BridgeMatch, "program bridge"},
		{"program differs, before a blocked state", ok(fsm.NeedsUserReview), fakeLive{program: &adapters.ProgramError{Code: adapters.ProgramDiffers}},
			fsm.Failed, "The installed program .tree-ring/bin/tree-ring differs", activation.BridgeMatch, "program bridge"},
		{"program writable by others", ok(fsm.Active), fakeLive{program: &adapters.ProgramError{Code: adapters.ProgramUnsafeMode, Path: adapters.BinaryPath, Mode: 0o777},
			found: activation.Found{Receipt: activeReceipt}},
			fsm.Failed, "The installed program .tree-ring/bin/tree-ring is writable by group or others (mode 0777)", activation.BridgeMatch, "program bridge"},
		// Issue 24 item 1: a program this store never installed is never
		// proof, whatever the ledger, the manifest or a receipt say.
		{"a foreign program, even with a receipt", ok(fsm.Active), fakeLive{program: &adapters.ProgramError{Code: adapters.ProgramForeign},
			found: activation.Found{Receipt: activeReceipt}},
			fsm.NeedsUserReview, "The program .tree-ring/bin/tree-ring was not installed by this store", "", "program"},
		{"a foreign program, the ledger's review stands", with(ok(fsm.NeedsUserReview), func(e *activation.Evidence) { e.Manifest, e.Record = activation.ManifestMissing, nil }),
			fakeLive{program: &adapters.ProgramError{Code: adapters.ProgramForeign}},
			fsm.NeedsUserReview, "The program .tree-ring/bin/tree-ring was not installed by this store", "", "program"},
		{"a foreign program does not concern a passive binding", activation.Evidence{Adapter: az, Ledger: true, Manifest: activation.ManifestPresent, Record: azRec, Events: true,
			LedgerState: fsm.NeedsPlugin, LedgerRecord: published(azRec)}, fakeLive{program: &adapters.ProgramError{Code: adapters.ProgramForeign}},
			fsm.ConfiguredAwaitingProof, activation.NextAwaitingProof("Agent Zero"), activation.BridgeMatch, "plugin bridge program"},
		// Issue 24 item 3: the host's own switch turns every hook off.
		{"claude-code hooks on, proven", cc(fsm.Active), fakeLive{found: activation.Found{Receipt: activeReceipt}},
			fsm.Active, activation.NextActive, activation.BridgeMatch, "program bridge hooks receipt"},
		{"claude-code hooks switched off, a receipt is no proof", cc(fsm.Active), fakeLive{hooksOff: switchedOff, found: activation.Found{Receipt: activeReceipt}},
			fsm.ConfiguredAwaitingProof, "Claude Code runs no hook: switched off", activation.BridgeMatch, "program bridge hooks"},
		{"claude-code hooks switched off, awaiting proof", cc(fsm.ConfiguredAwaitingProof), fakeLive{hooksOff: switchedOff},
			fsm.ConfiguredAwaitingProof, "Claude Code runs no hook: switched off", activation.BridgeMatch, "program bridge hooks"},
		{"claude-code settings unreadable", cc(fsm.Active), fakeLive{hooksOff: adapters.HooksOff{Diagnostic: adapters.HooksSwitchedOffDiagnostic, Next: "Tree Ring could not read"},
			found: activation.Found{Receipt: activeReceipt}}, fsm.Failed, "Tree Ring could not read", activation.BridgeMatch, "program bridge hooks"},
		{"claude-code recorded failure stands over the switch", cc(fsm.Failed), fakeLive{hooksOff: switchedOff},
			fsm.Failed, activation.NextFailed, activation.BridgeMatch, "program bridge"},
		{"gemini-cli trusted, hooks switched off", gem(fsm.Active), fakeLive{host: adapters.Trusted, hooksOff: adapters.HooksOff{File: ".gemini/settings.json", Next: "Gemini CLI runs no hook"},
			found: activation.Found{Receipt: activeReceipt}}, fsm.ConfiguredAwaitingProof, "Gemini CLI runs no hook", activation.BridgeMatch, "program bridge trust hooks"},
		{"gemini-cli untrusted: trust's step first", gem(fsm.Active), fakeLive{host: adapters.Untrusted, hooksOff: adapters.HooksOff{File: ".gemini/settings.json", Next: "Gemini CLI runs no hook"}},
			fsm.NeedsTrust, "Trust this project in Gemini CLI", activation.BridgeMatch, "program bridge trust"},
		{"untrusted host overrides a receipt", ok(fsm.Active), fakeLive{trust: &adapters.Trust{Next: "trust it"},
			found: activation.Found{Receipt: activeReceipt}}, fsm.NeedsTrust, "trust it", activation.BridgeMatch, "program bridge trust"},
		{"host settings unreadable", ok(fsm.ConfiguredAwaitingProof), fakeLive{trust: &adapters.Trust{Diagnostic: "x", Next: "repair it"}},
			fsm.Failed, "repair it", activation.BridgeMatch, "program bridge trust"},
		{"active", ok(fsm.Active), fakeLive{found: activation.Found{Receipt: activeReceipt, Age: 5}}, fsm.Active, activation.NextActive, activation.BridgeMatch, "program bridge trust hooks receipt"},
		{"active-isolated", ok(fsm.ActiveIsolated), fakeLive{found: activation.Found{Receipt: isolatedReceipt}}, fsm.ActiveIsolated, activation.NextActiveIsolated, activation.BridgeMatch, "program bridge trust hooks receipt"},
		{"codex hooks switched off, with a receipt", ok(fsm.Active), fakeLive{hooksOff: adapters.HooksOff{File: ".codex/config.toml", Next: "Codex runs no hook"},
			found: activation.Found{Receipt: activeReceipt}}, fsm.ConfiguredAwaitingProof, "Codex runs no hook", activation.BridgeMatch, "program bridge trust hooks"},
		{"the host does not trust the folder", gem(fsm.ConfiguredAwaitingProof), fakeLive{host: adapters.TrustUnknown},
			fsm.NeedsTrust, gemini.TrustStep(adapters.TrustUnknown), activation.BridgeMatch, "program bridge trust"},
		{"the host distrusts the folder: proven, but no receipt is read", gem(fsm.Active), fakeLive{host: adapters.Untrusted},
			fsm.NeedsTrust, gemini.TrustStep(adapters.TrustUnknown), activation.BridgeMatch, "program bridge trust"},
		{"the host trusts the folder", gem(fsm.Active), fakeLive{host: adapters.Trusted, found: activation.Found{Receipt: activeReceipt}},
			fsm.Active, activation.NextActive, activation.BridgeMatch, "program bridge trust hooks receipt"},
		{"a recorded failure stands over trust", gem(fsm.Failed), fakeLive{host: adapters.TrustUnknown},
			fsm.Failed, activation.NextFailed, activation.BridgeMatch, "program bridge"},
		// Pi records needs-trust; the installed Pi's own decision, read
		// live, supersedes it.
		{"pi without a gate (0.73) or trusted: awaiting proof", piAt(fsm.NeedsTrust), fakeLive{host: adapters.Trusted},
			fsm.ConfiguredAwaitingProof, activation.NextAwaitingProof("Pi"), activation.BridgeMatch, "program bridge trust"},
		{"pi gated and untrusted", piAt(fsm.NeedsTrust), fakeLive{host: adapters.TrustUnknown},
			fsm.NeedsTrust, "The installed Pi skips this project's extensions", activation.BridgeMatch, "program bridge trust"},
		{"pi gated and distrusted", piAt(fsm.NeedsTrust), fakeLive{host: adapters.Untrusted},
			fsm.NeedsTrust, "The installed Pi skips this project's extensions", activation.BridgeMatch, "program bridge trust"},
		{"pi version unknown", piAt(fsm.NeedsTrust), fakeLive{host: adapters.GateUnknown},
			fsm.NeedsTrust, "Tree Ring could not read the installed Pi's version", activation.BridgeMatch, "program bridge trust"},
		{"pi version unknown, but a receipt shows Pi ran the bridge", piAt(fsm.Active), fakeLive{host: adapters.GateUnknown, found: activation.Found{Receipt: activeReceipt}},
			fsm.Active, activation.NextActive, activation.BridgeMatch, "program bridge trust receipt"},
		{"pi version unknown, proven without a valid receipt", piAt(fsm.Active), fakeLive{host: adapters.GateUnknown, found: activation.Found{Rejected: 1}},
			fsm.NeedsTrust, "Tree Ring could not read the installed Pi's version", activation.BridgeMatch, "program bridge trust receipt"},
		{"pi proven, then the trust withdrawn", piAt(fsm.Active), fakeLive{host: adapters.Untrusted},
			fsm.NeedsTrust, "The installed Pi skips", activation.BridgeMatch, "program bridge trust"},
		{"pi trusted with a receipt", piAt(fsm.Active), fakeLive{host: adapters.Trusted, found: activation.Found{Receipt: activeReceipt}},
			fsm.Active, activation.NextActive, activation.BridgeMatch, "program bridge trust receipt"},
		{"pi's failed preflight stands with its diagnostic", with(piAt(fsm.Failed), func(e *activation.Evidence) { e.LedgerDiagnostic = "receipt_write_failed" }),
			fakeLive{host: adapters.Trusted}, fsm.Failed, activation.NextFailedWith(pi, "receipt_write_failed"), activation.BridgeMatch, "program bridge"},
		{"plugin found, awaiting its proof", activation.Evidence{Adapter: az, Ledger: true, Manifest: activation.ManifestPresent, Record: azRec, Events: true,
			LedgerState: fsm.NeedsPlugin, LedgerRecord: published(azRec)}, fakeLive{}, fsm.ConfiguredAwaitingProof, activation.NextAwaitingProof("Agent Zero"), activation.BridgeMatch, "plugin bridge program"},
	}
	seen := map[fsm.State]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			live := c.live
			live.a = c.ev.Adapter
			got := activation.Assess(c.ev, &live)
			if got.State != c.state || !strings.HasPrefix(got.Next, c.next) || got.Bridge != c.bridge {
				t.Errorf("got %s %q bridge %q; want %s %q... bridge %q", got.State, got.Next, got.Bridge, c.state, c.next, c.bridge)
			}
			wantDiag := ""
			if pe, ok := c.live.program.(*adapters.ProgramError); ok && (c.ev.Adapter.RunsProgram() || pe.Code != adapters.ProgramForeign) {
				wantDiag = pe.Code
			} else if c.live.trust != nil {
				wantDiag = c.live.trust.Diagnostic
			} else if c.live.hooksOff.Diagnostic != "" {
				wantDiag = c.live.hooksOff.Diagnostic
			} else if c.state == fsm.Failed {
				wantDiag = c.ev.LedgerDiagnostic
			}
			if got.Diagnostic != wantDiag {
				t.Errorf("diagnostic %q, want %q", got.Diagnostic, wantDiag)
			}
			if asked := strings.Join(live.asked, " "); asked != c.asked {
				t.Errorf("live evidence read: %q, want %q", asked, c.asked)
			}
			if strings.Contains(c.asked, "receipt") && c.live.found.Receipt != nil && (got.Receipt != c.live.found.Receipt || got.Age != c.live.found.Age) {
				t.Errorf("receipt not reported: %+v", got.Found)
			}
			if strings.Contains(c.asked, "receipt") && live.recorded != c.ev.Record.BridgeFingerprint {
				t.Errorf("receipts verified against %q, want the recomputed fingerprint", live.recorded)
			}
		})
		seen[c.state] = true
	}
	for _, s := range fsm.States {
		if !seen[s] {
			t.Errorf("no case ends in %s", s)
		}
	}
}

func TestListed(t *testing.T) {
	codex, az := lookup(t, "codex"), lookup(t, "agent-zero")
	for _, c := range []struct {
		detected bool
		ev       activation.Evidence
		want     bool
	}{
		{false, activation.Evidence{Adapter: codex}, false},
		{true, activation.Evidence{Adapter: codex}, true},
		{false, activation.Evidence{Adapter: codex, Events: true}, true},
		{false, activation.Evidence{Adapter: codex, Record: current(codex)}, true},
		{false, activation.Evidence{Adapter: az}, true},
	} {
		if got := activation.Listed(c.detected, c.ev); got != c.want {
			t.Errorf("Listed(%v, %+v) = %v", c.detected, c.ev, got)
		}
	}
}
