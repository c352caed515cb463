package main

// The event fixtures under testdata/fixtures are generated here: each
// scenario is appended to a real bolt ledger (real hash chain) with a fixed
// clock and ids, as a writer would (state replayed at now, then fsm.Decide),
// and exported as NDJSON. Without -update the test regenerates them and
// requires the committed files to be byte-identical, so a fixture can never
// drift from what the code produces. The *.expect.json files are written by
// hand (docs/fixtures.md).

import (
	"bytes"
	"cmp"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/fsm"
)

const fixturesDir = "../../testdata/fixtures"

var fixtureStart = time.Date(2026, 9, 1, 9, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// builder appends one scenario. The clock advances one second per event;
// after() jumps.
type builder struct {
	t   *testing.T
	st  *bolt.Store
	now time.Time
	n   uint64
	// escape, when set, rewrites each payload's keys into JSON escapes
	// (the same keys to every reader; issue 18).
	escape *strings.Replacer
	// moved is the project root's fingerprint digit after a move ('a'
	// until then).
	moved byte
}

func (b *builder) after(d time.Duration) { b.now = b.now.Add(d) }

func (b *builder) envelope(stream, typ string, p any) events.Envelope {
	b.t.Helper()
	b.now = b.now.Add(time.Second)
	b.n++
	f := &events.Factory{Now: func() time.Time { return b.now }, NewID: func() ulid.ULID {
		var id ulid.ULID
		_ = id.SetTime(ulid.Timestamp(b.now))
		copy(id[8:], []byte{0, 0, 0, 0, 0, 0, byte(b.n >> 8), byte(b.n)})
		return id
	}, Actor: "tree-ring"}
	e, err := f.New(stream, typ, p)
	if err != nil {
		b.t.Fatalf("%s: %v", typ, err)
	}
	if b.escape != nil {
		e.Payload = []byte(b.escape.Replace(string(e.Payload)))
	}
	return e
}

func (b *builder) append(stream, typ string, p any) {
	b.t.Helper()
	if _, err := b.st.Append(context.Background(), stream, bolt.AnyVersion, b.envelope(stream, typ, p)); err != nil {
		b.t.Fatal(err)
	}
}

// state replays the harness's stream at the builder's next instant, as a
// writer does before deciding.
func (b *builder) state(h string) fsm.State {
	b.t.Helper()
	var envs []events.Envelope
	if err := b.st.ReadStream(context.Background(), events.HarnessStream(h), 0, func(e *events.Envelope) error {
		envs = append(envs, *e)
		return nil
	}); err != nil {
		b.t.Fatal(err)
	}
	s, err := fsm.StateAt(envs, h, b.now.Add(time.Second))
	if err != nil {
		b.t.Fatal(err)
	}
	return s
}

// move appends a harness-moving event decided by the table.
func (b *builder) move(h, typ, transition string, mk func(events.Transition) any) {
	b.t.Helper()
	cur := b.state(h)
	to, err := fsm.Decide(cur, transition)
	if err != nil {
		b.t.Fatalf("%s %s: %v", h, transition, err)
	}
	b.append(events.HarnessStream(h), typ, mk(events.Transition{From: string(cur), To: string(to)}))
}

func hexOf(c byte) string { return strings.Repeat(string(c), 64) }

const (
	storeID      = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
	otherStoreID = "0a9b8c7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d"
)

var adapterOf = map[string][2]string{ // harness -> adapter version, capability
	"codex": {"4", "native-preflight"}, "claude-code": {"4", "native-preflight"}, "pi": {"1", "native-preflight"},
	"agent-zero": {"1", "native-preflight"}, "hermes": {"0", "guidance-only"}, "opencode": {"0", "guidance-only"}, "goose": {"0", "guidance-only"},
	"gemini-cli": {"1", "native-preflight"},
}

// guidanceHarnesses are the guidance-only adapters registered after the
// first three; their fixture is guidance-harnesses.
var guidanceHarnesses = []string{"antigravity-cli", "command-code", "crush", "cursor", "devin-cli", "grok-build", "kimi-code", "kiro-cli", "omp"}

func init() {
	for _, h := range guidanceHarnesses {
		adapterOf[h] = [2]string{"0", "guidance-only"}
	}
}

var bridgeOf = map[string]string{
	"codex": ".codex/hooks.json", "claude-code": ".claude/settings.json", "pi": ".pi/extensions/tree-ring-memory.ts",
	"agent-zero": ".tree-ring/activation/agent-zero.json", "gemini-cli": ".gemini/settings.json",
}

func (b *builder) initStore() {
	b.append(events.StoreStream, events.TypeStoreInitialized, &events.StoreInitialized{
		StoreID: storeID, Format: 1, ProjectRootFingerprint: hexOf('a'), CLIVersion: "0.1.0",
	})
}

func (b *builder) detect(h string) {
	b.move(h, events.TypeHarnessDetected, fsm.Detect, func(tr events.Transition) any {
		return &events.HarnessDetected{Transition: tr, HarnessID: h, AdapterVersion: adapterOf[h][0], Capability: adapterOf[h][1], Markers: []string{"." + h}}
	})
}

func (b *builder) publish(h string) {
	name := fsm.Publish
	if h == "agent-zero" {
		name = fsm.RequirePlugin // the passive binding
	}
	b.move(h, events.TypeBridgePublished, name, func(tr events.Transition) any {
		return &events.BridgePublished{
			Transition: tr, HarnessID: h, AdapterVersion: adapterOf[h][0], Capability: adapterOf[h][1],
			BridgeFingerprint: hexOf('c'), BridgePath: bridgeOf[h],
			OwnedFiles: []events.FileDigest{{Path: bridgeOf[h], SHA256: hexOf('1')}}, ManagedBlocks: []events.BlockDigest{},
			ChangedPaths: []string{bridgeOf[h]},
		}
	})
}

// preflight appends what one successful preflight records: started, the
// decided transition with its receipt, and the receipt itself.
func (b *builder) preflight(h string, worker byte, receipt string, isolated bool) {
	b.append(events.HarnessStream(h), events.TypePreflightStarted, &events.PreflightStarted{HarnessID: h, WorkerKeyFingerprint: hexOf(worker)})
	name, state, store := fsm.Prove, fsm.Active, storeID
	if isolated {
		name, state, store = fsm.ProveIsolated, fsm.ActiveIsolated, otherStoreID
	}
	b.move(h, events.TypePreflightSucceeded, name, func(tr events.Transition) any {
		return &events.PreflightSucceeded{Transition: tr, HarnessID: h, WorkerKeyFingerprint: hexOf(worker), ReceiptID: receipt,
			QueryClass: "startup_fallback", ResultCount: 3, SelectedMemoryIDsSHA256: hexOf('e'), DurationMS: 14}
	})
	b.append(events.HarnessStream(h), events.TypeReceiptRecorded, &events.ReceiptRecorded{
		HarnessID: h, ReceiptID: receipt, ProtocolVersion: 1, AdapterVersion: adapterOf[h][0], BridgeFingerprint: hexOf('c'),
		StoreID: store, ProjectRootFingerprint: hexOf(cmp.Or(b.moved, 'a')), WorkerKeyFingerprint: hexOf(worker), State: string(state),
		QueryClass: "startup_fallback", ResultCount: 3, SelectedMemoryIDsSHA256: hexOf('e'), DurationMS: 14, Status: "success", SHA256: hexOf('f'),
	})
}

// scenarios are the fixtures; docs/fixtures.md lists them.
var scenarios = []struct {
	name  string
	build func(b *builder)
}{
	{"install-to-active", func(b *builder) {
		b.detect("codex")
		b.publish("codex")
		b.append(events.StoreStream, events.TypeManifestPublished, &events.ManifestPublished{Path: ".tree-ring/activation.json", SHA256: hexOf('3'), Harnesses: []string{"codex"}})
		b.after(time.Hour)
		b.preflight("codex", 'b', "receipt-install-1", false)
	}},
	{"receipt-expired", func(b *builder) {
		b.detect("claude-code")
		b.publish("claude-code")
		b.after(time.Hour)
		b.preflight("claude-code", 'b', "receipt-expired-1", false)
		b.after(40 * day)
		b.preflight("claude-code", 'b', "receipt-expired-2", false)
	}},
	{"isolated-store", func(b *builder) {
		b.detect("codex")
		b.publish("codex")
		b.after(time.Hour)
		b.preflight("codex", 'b', "receipt-isolated-1", true)
	}},
	{"drift-after-receipt", func(b *builder) {
		b.detect("claude-code")
		b.publish("claude-code")
		b.after(time.Hour)
		b.preflight("claude-code", 'b', "receipt-drift-1", false)
		b.after(day)
		b.move("claude-code", events.TypeBridgeDriftDetected, fsm.Drift, func(tr events.Transition) any {
			return &events.BridgeDriftDetected{Transition: tr, HarnessID: "claude-code", Paths: []string{".claude/settings.json"}}
		})
	}},
	{"pi-needs-trust", func(b *builder) {
		b.detect("pi")
		b.publish("pi")
		b.move("pi", events.TypeTrustRequired, fsm.RequireTrust, func(tr events.Transition) any {
			return &events.TrustRequired{Transition: tr, HarnessID: "pi"}
		})
		b.after(day)
		b.preflight("pi", 'b', "receipt-pi-1", false)
	}},
	{"agent-zero-plugin", func(b *builder) {
		b.detect("agent-zero")
		b.publish("agent-zero")
		b.after(time.Hour)
		b.move("agent-zero", events.TypePluginDescriptorFound, fsm.FindPlugin, func(tr events.Transition) any {
			return &events.PluginDescriptorFound{Transition: tr, HarnessID: "agent-zero", PluginVersion: "1.2.0"}
		})
		b.preflight("agent-zero", 'b', "receipt-a0-1", false)
		b.after(day)
		b.move("agent-zero", events.TypePluginDescriptorLost, fsm.LosePlugin, func(tr events.Transition) any {
			return &events.PluginDescriptorLost{Transition: tr, HarnessID: "agent-zero", Reason: "descriptor_disabled"}
		})
	}},
	{"deactivation", func(b *builder) {
		b.detect("codex")
		b.publish("codex")
		b.after(time.Hour)
		b.preflight("codex", 'b', "receipt-deactivation-1", false)
		b.after(day)
		b.move("codex", events.TypeHarnessDeactivationRequested, fsm.Deactivate, func(tr events.Transition) any {
			return &events.HarnessDeactivationRequested{Transition: tr, HarnessID: "codex", Paths: []string{".codex/hooks.json"}}
		})
		b.after(day)
		b.move("codex", events.TypeHarnessDeactivated, fsm.Remove, func(tr events.Transition) any {
			return &events.HarnessDeactivated{Transition: tr, HarnessID: "codex"}
		})
	}},
	{"moved-project", func(b *builder) {
		b.detect("claude-code")
		b.publish("claude-code")
		b.after(time.Hour)
		b.preflight("claude-code", 'b', "receipt-old-root-1", false)
		b.after(day)
		// reconcile --apply at the new root: the move, then the harness
		// proven at the old root back to awaiting proof.
		b.append(events.StoreStream, events.TypeStoreRootMoved, &events.StoreRootMoved{PreviousProjectRootFingerprint: hexOf('a'), ProjectRootFingerprint: hexOf('d')})
		b.moved = 'd'
		b.move("claude-code", events.TypeBridgeDriftDetected, fsm.Drift, func(tr events.Transition) any {
			return &events.BridgeDriftDetected{Transition: tr, HarnessID: "claude-code", Paths: []string{}, Reason: "project_root_moved"}
		})
		b.publish("claude-code")
		b.after(time.Hour)
		b.preflight("claude-code", 'b', "receipt-new-root-1", false)
	}},
	{"unsupported-harnesses", func(b *builder) {
		b.detect("hermes")
		b.detect("opencode")
		b.detect("goose")
	}},
	{"gemini-cli-to-active", func(b *builder) {
		b.detect("gemini-cli")
		b.publish("gemini-cli")
		b.after(time.Hour)
		b.preflight("gemini-cli", 'b', "receipt-gemini-1", false)
	}},
	{"guidance-harnesses", func(b *builder) {
		for _, h := range guidanceHarnesses {
			b.detect(h)
		}
	}},
	{"preflight-failed", func(b *builder) {
		b.detect("claude-code")
		b.publish("claude-code")
		b.after(time.Hour)
		b.append(events.HarnessStream("claude-code"), events.TypePreflightStarted, &events.PreflightStarted{HarnessID: "claude-code", WorkerKeyFingerprint: hexOf('b')})
		b.move("claude-code", events.TypePreflightFailed, fsm.Fail, func(tr events.Transition) any {
			return &events.PreflightFailed{Transition: tr, HarnessID: "claude-code", Reason: "preflight_timeout"}
		})
	}},
	{"hook-failed-then-proved", func(b *builder) {
		b.detect("codex")
		b.publish("codex")
		b.after(time.Hour)
		b.preflight("codex", 'b', "receipt-before-1", false)
		b.after(time.Hour)
		// The hook could not write its output (a full stdout): its failed
		// run and this, in one commit (docs/preflight.md).
		b.move("codex", events.TypePreflightFailed, fsm.Fail, func(tr events.Transition) any {
			return &events.PreflightFailed{Transition: tr, HarnessID: "codex", Reason: "output_failed"}
		})
		b.after(time.Hour)
		b.preflight("codex", 'b', "receipt-after-1", false)
	}},
	{"project-unreachable", func(b *builder) {
		b.detect("agent-zero")
		b.publish("agent-zero")
		b.after(time.Hour)
		b.move("agent-zero", events.TypePluginDescriptorFound, fsm.FindPlugin, func(tr events.Transition) any {
			return &events.PluginDescriptorFound{Transition: tr, HarnessID: "agent-zero", PluginVersion: "1.2.0"}
		})
		b.preflight("agent-zero", 'b', "receipt-mount-1", false)
		b.after(day)
		b.move("agent-zero", events.TypeProjectUnreachable, fsm.LoseMount, func(tr events.Transition) any {
			return &events.ProjectUnreachable{Transition: tr, HarnessID: "agent-zero", Reason: "project_root_not_mounted"}
		})
	}},
	{"two-workers", func(b *builder) {
		b.detect("claude-code")
		b.publish("claude-code")
		b.after(time.Hour)
		b.preflight("claude-code", 'b', "receipt-worker-b", false)
		b.after(10 * day)
		b.preflight("claude-code", 'd', "receipt-worker-d", false)
	}},
	// Payload keys spelled with JSON escapes ("\u0074o" is the key to) are
	// the same keys to every reader (issue 18). Here the transitions
	// spell "from" and "to" with escapes and replay as written...
	{"escaped-transition-keys", func(b *builder) {
		b.detect("claude-code")
		b.escape = strings.NewReplacer(`"to":`, `"\u0074o":`, `"from":`, `"fr\u006fm":`)
		b.publish("claude-code")
		b.after(time.Hour)
		b.preflight("claude-code", 'b', "receipt-escaped-1", false)
	}},
	// ...and here the pruned receipt's "receipt_id" is escaped: the receipt
	// no longer proves anything, exactly as with the plain key.
	{"escaped-receipt-key", func(b *builder) {
		b.detect("claude-code")
		b.publish("claude-code")
		b.after(time.Hour)
		b.preflight("claude-code", 'b', "receipt-escaped-2", false)
		b.after(day)
		b.escape = strings.NewReplacer(`"receipt_id":`, `"\u0072eceipt_id":`)
		b.append(events.HarnessStream("claude-code"), events.TypeReceiptPruned, &events.ReceiptPruned{
			HarnessID: "claude-code", WorkerKeyFingerprint: hexOf('b'), ReceiptID: "receipt-escaped-2", Reason: "over_limit",
		})
	}},
	// init adopting a project the Rust Tree Ring initialized
	// (docs/adoption.md): the records as published, codex's version 3
	// definition to review, one receipt file adopted as proof (dated by
	// its own recorded_at, an hour before the adoption), the others kept
	// untrusted.
	{"adopt-rust-project", func(b *builder) {
		b.append(events.StoreStream, events.TypeStoreAdopted, &events.StoreAdopted{
			StoreID: storeID, ManifestSHA256: hexOf('3'), CLIVersion: "0.15.13", Harnesses: []string{"agent-zero", "claude-code", "codex"},
			ReceiptsFound: 3, ReceiptsVerified: 1, ReceiptsUntrusted: 2,
		})
		adopted := func(h, version string, to fsm.State) {
			name := fsm.Publish
			if to == fsm.NeedsPlugin {
				name = fsm.RequirePlugin
			}
			b.move(h, events.TypeBridgePublished, name, func(tr events.Transition) any {
				return &events.BridgePublished{Transition: tr, HarnessID: h, AdapterVersion: version, Capability: "native-preflight",
					BridgeFingerprint: hexOf('c'), BridgePath: bridgeOf[h], OwnedFiles: []events.FileDigest{{Path: bridgeOf[h], SHA256: hexOf('1')}},
					ManagedBlocks: []events.BlockDigest{}, ChangedPaths: []string{}, Recognized: true, RecordState: string(to)}
			})
		}
		dir := func(h string) string { return ".tree-ring/activation/receipts/" + h + "/" + hexOf('b') + "/" }
		foreign := func(h, id, reason string) {
			b.append(events.HarnessStream(h), events.TypeReceiptForeign, &events.ReceiptForeign{
				HarnessID: h, ReceiptID: id, Path: dir(h) + id + ".json", SHA256: hexOf('4'), Reason: reason})
		}
		adopted("agent-zero", "1", fsm.NeedsPlugin)
		adopted("claude-code", "4", fsm.ConfiguredAwaitingProof)
		foreign("claude-code", "receipt-1c9f7a3b-2d4e-4f60-9b0c-1d2e3f4a5b6c", events.ForeignRulePrefix+"8")
		const rid = "receipt-0b8e6f2a-1c3d-4e5f-8a9b-0c1d2e3f4a5b"
		b.move("claude-code", events.TypeReceiptAdopted, fsm.Prove, func(tr events.Transition) any {
			return &events.ReceiptAdopted{Transition: tr, ReceiptRecorded: events.ReceiptRecorded{
				HarnessID: "claude-code", ReceiptID: rid, ProtocolVersion: 1, AdapterVersion: "4", BridgeFingerprint: hexOf('c'),
				StoreID: storeID, ProjectRootFingerprint: hexOf('a'), WorkerKeyFingerprint: hexOf('b'), State: string(fsm.Active),
				QueryClass: "startup_fallback", SelectedMemoryIDsSHA256: hexOf('e'), DurationMS: 18, Status: "success", SHA256: hexOf('5'),
				RecordedAt: "2026-09-01T08:00:00Z", Session: &events.ReceiptSession{AgentProfile: "claude-code", WorkflowID: "session-01", SessionID: "session-01"},
				Path: dir("claude-code") + rid + ".json",
			}}
		})
		adopted("codex", "3", fsm.ConfiguredAwaitingProof)
		b.move("codex", events.TypePublicationReviewRequired, fsm.RequireReview, func(tr events.Transition) any {
			return &events.PublicationReviewRequired{Transition: tr, HarnessID: "codex", Reason: "adapter_definition_changed", Paths: []string{bridgeOf["codex"]}}
		})
		foreign("codex", "receipt-2da08b4c-3e5f-4071-a0c1-2e3f4a5b6c7d", events.ForeignIneligible)
		b.append(events.StoreStream, events.TypeManifestPublished, &events.ManifestPublished{Path: ".tree-ring/activation.json", SHA256: hexOf('3'),
			Harnesses: []string{"agent-zero", "claude-code", "codex"}, CLIVersion: "0.15.13", Adopted: true})
	}},
	{"illegal-transition", func(b *builder) {
		b.detect("codex")
		b.publish("codex")
		b.after(time.Hour)
		// A buggy writer: it claims the harness was needs-trust, but the
		// ledger says configured-awaiting-proof.
		b.append(events.HarnessStream("codex"), events.TypePreflightSucceeded, &events.PreflightSucceeded{
			Transition: events.Transition{From: string(fsm.NeedsTrust), To: string(fsm.Active)}, HarnessID: "codex",
			WorkerKeyFingerprint: hexOf('b'), ReceiptID: "receipt-illegal-1", QueryClass: "startup_fallback", ResultCount: 0,
			SelectedMemoryIDsSHA256: hexOf('e'), DurationMS: 9,
		})
		// What that writer appends next; replay must not go past the error.
		b.after(day)
		b.append(events.HarnessStream("codex"), events.TypeHarnessDetected, &events.HarnessDetected{
			Transition: events.Transition{From: string(fsm.Active), To: string(fsm.Active)}, HarnessID: "codex",
			AdapterVersion: "4", Capability: "native-preflight", Markers: []string{".codex"},
		})
	}},
}

// generateFixture builds one scenario in a fresh ledger and exports it.
func generateFixture(t *testing.T, build func(b *builder)) []byte {
	t.Helper()
	st, err := bolt.OpenRoot(filepath.Join(t.TempDir(), ".tree-ring"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := &builder{t: t, st: st, now: fixtureStart}
	b.initStore()
	build(b)
	var out bytes.Buffer
	if err := st.ScanRaw(context.Background(), 0, func(_ uint64, raw []byte) error {
		out.Write(raw)
		out.WriteByte('\n')
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestFixturesAreGenerated(t *testing.T) {
	seen := map[string]bool{}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			got := generateFixture(t, sc.build)
			eventstest.Golden(t, filepath.Join(fixturesDir, sc.name+".ndjson"), got)
		})
		seen[sc.name] = true
	}
	// No stale fixture without a generator (hand-written ones would not be
	// hash-chained by a real ledger).
	files, _ := filepath.Glob(filepath.Join(fixturesDir, "*.ndjson"))
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".ndjson"); !seen[name] {
			t.Errorf("%s has no scenario in scenarios", f)
		}
	}
}
