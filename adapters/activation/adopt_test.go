package activation_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/activation"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/fsm"
)

// The status rule before adoption, case by case: given the manifest's
// record and the live evidence, the protocol's state and step.
func TestAssessUnadopted(t *testing.T) {
	codex, claude, az, pi, goose := lookup(t, "codex"), lookup(t, "claude-code"), lookup(t, "agent-zero"), lookup(t, "pi"), lookup(t, "goose")
	stale := *current(codex)
	stale.AdapterVersion = "3"
	stale.BridgeFingerprint = adapters.BridgeFingerprint("codex", "3", stale.OwnedFiles, stale.ManagedBlocks)
	persistedActive := *current(claude)
	persistedActive.State = string(fsm.Active)
	notPassive := *current(az)
	notPassive.State = string(fsm.ConfiguredAwaitingProof)
	proven := &receipt.Receipt{State: string(fsm.Active), ResultCount: 2, QueryClass: "startup_fallback"}
	isolated := &receipt.Receipt{State: string(fsm.ActiveIsolated)}
	for _, tc := range []struct {
		name  string
		a     *adapters.Adapter
		cond  string
		rec   *adapters.Record
		live  fakeLive
		state fsm.State
		next  string
		asked string
	}{
		{"guidance-only", goose, activation.ManifestPresent, nil, fakeLive{}, fsm.Unsupported, activation.NextFor(goose, fsm.Unsupported, false), ""},
		{"manifest invalid", claude, activation.ManifestInvalid, nil, fakeLive{}, fsm.Unsupported, activation.NextInit, ""},
		{"no record", claude, activation.ManifestPresent, nil, fakeLive{}, fsm.Unsupported, activation.NextInit, ""},
		{"version 3 codex", codex, activation.ManifestPresent, &stale, fakeLive{found: activation.Found{Receipt: proven}}, fsm.NeedsUserReview, activation.NextStale, ""},
		{"bridge changed", claude, activation.ManifestPresent, current(claude), fakeLive{fp: strings.Repeat("0", 64), changed: []string{".claude/settings.json"}},
			fsm.NeedsUserReview, activation.NextReview("claude-code") + " Changed on disk: .claude/settings.json.", "bridge"},
		{"awaiting proof", claude, activation.ManifestPresent, current(claude), fakeLive{}, fsm.ConfiguredAwaitingProof, activation.NextAdopt, "bridge"},
		{"persisted active", claude, activation.ManifestPresent, &persistedActive, fakeLive{}, fsm.ConfiguredAwaitingProof, activation.NextAdopt, "bridge"},
		// Issue 24 finding 2: receipt files before init are another
		// writer's, or a clone's forgery: never read as proof.
		{"a valid receipt on disk is not proof", claude, activation.ManifestPresent, current(claude), fakeLive{found: activation.Found{Receipt: proven}}, fsm.ConfiguredAwaitingProof, activation.NextAdopt, "bridge"},
		{"nor an isolated one", codex, activation.ManifestPresent, current(codex), fakeLive{found: activation.Found{Receipt: isolated}}, fsm.ConfiguredAwaitingProof, activation.NextAdopt, "bridge"},
		{"pi behind its trust gate with a receipt", pi, activation.ManifestPresent, current(pi), fakeLive{found: activation.Found{Receipt: proven}}, fsm.NeedsTrust, activation.NextAdopt, "bridge"},
		// Issue 24 finding 10: a clone's hook file that runs a hostile
		// command beside Tree Ring's entries is no reviewed bridge.
		{"a hook file with other commands", codex, activation.ManifestPresent, current(codex), fakeLive{hooks: true}, fsm.NeedsUserReview, activation.NextForeignHooks("codex", ".codex/hooks.json"), "bridge"},
		{"agent zero without its plugin", az, activation.ManifestPresent, current(az), fakeLive{plugin: os.ErrNotExist, found: activation.Found{Receipt: proven}}, fsm.NeedsPlugin, activation.NextNeedsPlugin, "plugin"},
		{"agent zero with its plugin", az, activation.ManifestPresent, current(az), fakeLive{}, fsm.ConfiguredAwaitingProof, activation.NextAdopt, "plugin bridge"},
		{"agent zero not passive", az, activation.ManifestPresent, &notPassive, fakeLive{}, fsm.NeedsUserReview, activation.NextReview("agent-zero"), "plugin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := tc.live
			s := activation.AssessUnadopted(activation.Evidence{Adapter: tc.a, Manifest: tc.cond, Record: tc.rec}, &live)
			if s.State != tc.state || s.Next != tc.next || strings.Join(live.asked, " ") != tc.asked {
				t.Fatalf("got %s %q (asked %v), want %s %q (%s)", s.State, s.Next, live.asked, tc.state, tc.next, tc.asked)
			}
		})
	}
}

// FuzzAdopt adopts arbitrary manifest and receipt bytes: it never panics,
// and an adoption it accepts appends only events that pass the catalogue's
// validation and keep the manifest's store id.
func FuzzAdopt(f *testing.F) {
	codex := lookup(f, "codex")
	rec := *current(codex)
	m := adapters.Manifest{SchemaVersion: 1, ProtocolVersion: 1, StoreID: "5b0c9d3e-7a41-4f2b-9c6d-1e8f2a3b4c5d",
		ProjectRootFingerprint: strings.Repeat("a", 64), CLIVersion: "0.15.13", Harnesses: map[string]adapters.Record{"codex": rec}}
	r := receipt.Receipt{SchemaVersion: 1, ProtocolVersion: 1, ReceiptID: "receipt-0b8e6f2a-1c3d-4e5f-8a9b-0c1d2e3f4a5b", HarnessID: "codex",
		AdapterVersion: rec.AdapterVersion, BridgeFingerprint: rec.BridgeFingerprint, StoreID: m.StoreID, ProjectRootFingerprint: m.ProjectRootFingerprint,
		WorkerKeyFingerprint: preflight.WorkerKeyFingerprint("codex", "codex"), Session: preflight.Identity{AgentProfile: "codex", WorkflowID: "s", SessionID: "s"},
		State: "active", QueryClass: "startup_fallback", SelectedMemoryIDsSHA256: strings.Repeat("f", 64), Status: "success", RecordedAt: "2026-10-31T12:00:00Z"}
	f.Add(m.Encode(), r.Encode())
	f.Add([]byte(`{"schema_version":1}`), []byte(`{`))
	f.Fuzz(func(t *testing.T, manifest, rcpt []byte) {
		dir := t.TempDir()
		dir, _ = filepath.EvalSymlinks(dir)
		fp := adapters.ProjectRootFingerprint(dir)
		manifest = []byte(strings.ReplaceAll(string(manifest), strings.Repeat("a", 64), fp))
		rcpt = []byte(strings.ReplaceAll(string(rcpt), strings.Repeat("a", 64), fp))
		rel := receipt.WorkerDir("codex", "codex") + "/" + r.ReceiptID + ".json"
		for p, data := range map[string][]byte{adapters.ManifestPath: manifest, rel: rcpt} {
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, p), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		root, err := adapters.OpenProjectRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		ad, exists, err := activation.Adopt(activation.AdoptInput{Root: root, ProjectRootFingerprint: fp, CLIVersion: "test", Now: func() time.Time { return eventstest.Epoch }})
		if err != nil || !exists {
			return
		}
		fac := &events.Factory{Now: func() time.Time { return eventstest.Epoch }, NewID: eventstest.IDs(0), Actor: "cli"}
		for _, p := range ad.Events {
			e, err := fac.New(p.Stream, p.Type, p.Payload)
			if err != nil {
				t.Fatalf("%s: %v", p.Type, err)
			}
			if _, err := events.DecodePayload(&e); err != nil {
				t.Fatalf("%s does not decode back: %v", p.Type, err)
			}
		}
		if ad.Events[0].Payload.(*events.StoreInitialized).StoreID != ad.Manifest.StoreID {
			t.Fatal("store id not kept")
		}
	})
}

// adoptProject writes the material of harnesses ids as Tree Ring
// publishes it and a manifest recording it, and returns the project.
func adoptProject(t *testing.T, ids ...string) (dir string, m adapters.Manifest) {
	t.Helper()
	dir, _ = filepath.EvalSymlinks(t.TempDir())
	fp := adapters.ProjectRootFingerprint(dir)
	ctx := adapters.Context{StoreID: "5b0c9d3e-7a41-4f2b-9c6d-1e8f2a3b4c5d", ProjectRootFingerprint: fp}
	m = adapters.Manifest{SchemaVersion: 1, ProtocolVersion: 1, StoreID: ctx.StoreID, ProjectRootFingerprint: fp, CLIVersion: "0.15.13", Harnesses: map[string]adapters.Record{}}
	put := func(rel string, data []byte) {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		a := lookup(t, id)
		mat := a.Material(ctx)
		for _, f := range mat.Files {
			put(f.Path, f.Data)
		}
		for _, b := range mat.Blocks {
			put(b.Path, b.Whole)
		}
		m.Harnesses[id] = a.Record(mat)
	}
	put(adapters.ManifestPath, m.Encode())
	return dir, m
}

func receiptFor(m adapters.Manifest, harness, id string, at time.Time) receipt.Receipt {
	rec := m.Harnesses[harness]
	return receipt.Receipt{SchemaVersion: 1, ProtocolVersion: 1, ReceiptID: id, HarnessID: harness, AdapterVersion: rec.AdapterVersion,
		BridgeFingerprint: rec.BridgeFingerprint, StoreID: m.StoreID, ProjectRootFingerprint: m.ProjectRootFingerprint,
		WorkerKeyFingerprint: preflight.WorkerKeyFingerprint(harness, harness), Session: preflight.Identity{AgentProfile: harness, WorkflowID: "w", SessionID: "s"},
		State: string(fsm.Active), QueryClass: "startup_fallback", SelectedMemoryIDsSHA256: strings.Repeat("f", 64), Status: "success",
		RecordedAt: receipt.FormatTime(at)}
}

// Adopt, harness by harness: the events and the state each record is
// adopted in, from what is on disk.
func TestAdoptOutcomes(t *testing.T) {
	now := eventstest.Epoch
	for _, tc := range []struct {
		name   string
		ids    []string
		edit   func(t *testing.T, dir string, m adapters.Manifest)
		states map[string]fsm.State
		types  string
	}{
		{"claude-code as published", []string{"claude-code"}, nil,
			map[string]fsm.State{"claude-code": fsm.ConfiguredAwaitingProof}, "bridge.published"},
		{"claude-code settings changed since", []string{"claude-code"}, func(t *testing.T, dir string, _ adapters.Manifest) {
			if err := os.WriteFile(filepath.Join(dir, ".claude/settings.json"), []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, map[string]fsm.State{"claude-code": fsm.NeedsUserReview}, "publication.review_required"},
		// A receipt that passes the eight rules is another writer's (or a
		// clone's forgery for a predictable root): data, never proof.
		{"pi behind its trust gate, with a valid receipt", []string{"pi"}, func(t *testing.T, dir string, m adapters.Manifest) {
			r := receiptFor(m, "pi", "receipt-0b8e6f2a-1c3d-4e5f-8a9b-0c1d2e3f4a5b", now.Add(-time.Hour))
			writeReceipt(t, dir, r.Path(), r.Encode())
		}, map[string]fsm.State{"pi": fsm.NeedsTrust}, "bridge.published receipt.foreign/other_writer"},
		{"claude-code with a valid receipt", []string{"claude-code"}, func(t *testing.T, dir string, m adapters.Manifest) {
			r := receiptFor(m, "claude-code", "receipt-0b8e6f2a-1c3d-4e5f-8a9b-0c1d2e3f4a5b", now.Add(-time.Hour))
			writeReceipt(t, dir, r.Path(), r.Encode())
		}, map[string]fsm.State{"claude-code": fsm.ConfiguredAwaitingProof}, "bridge.published receipt.foreign/other_writer"},
		{"a receipt in another worker's directory", []string{"codex"}, func(t *testing.T, dir string, m adapters.Manifest) {
			r := receiptFor(m, "codex", "receipt-0b8e6f2a-1c3d-4e5f-8a9b-0c1d2e3f4a5b", now.Add(-time.Hour))
			writeReceipt(t, dir, receipt.WorkerDir("codex", "someone-else")+"/"+r.ReceiptID+".json", r.Encode())
		}, map[string]fsm.State{"codex": fsm.ConfiguredAwaitingProof}, "bridge.published receipt.foreign/misplaced"},
		{"a receipt from the future", []string{"codex"}, func(t *testing.T, dir string, m adapters.Manifest) {
			r := receiptFor(m, "codex", "receipt-0b8e6f2a-1c3d-4e5f-8a9b-0c1d2e3f4a5b", now.Add(time.Hour))
			writeReceipt(t, dir, r.Path(), r.Encode())
		}, map[string]fsm.State{"codex": fsm.ConfiguredAwaitingProof}, "bridge.published receipt.foreign/rule_8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, m := adoptProject(t, tc.ids...)
			if tc.edit != nil {
				tc.edit(t, dir, m)
			}
			root, err := adapters.OpenProjectRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			ad, exists, err := activation.Adopt(activation.AdoptInput{Root: root, ProjectRootFingerprint: adapters.ProjectRootFingerprint(dir),
				CLIVersion: "test", Now: func() time.Time { return now }})
			if err != nil || !exists {
				t.Fatalf("adopt: %v %v", exists, err)
			}
			var types []string
			for _, p := range ad.Events[2:] {
				if f, ok := p.Payload.(*events.ReceiptForeign); ok {
					types = append(types, p.Type+"/"+f.Reason)
					continue
				}
				types = append(types, p.Type)
			}
			got := map[string]fsm.State{}
			for _, o := range ad.Outcomes {
				got[o.Adapter.ID] = o.State
			}
			if strings.Join(types, " ") != tc.types || len(got) != len(tc.states) {
				t.Fatalf("events %v, states %v", types, got)
			}
			for id, s := range tc.states {
				if got[id] != s {
					t.Fatalf("%s: %s, want %s", id, got[id], s)
				}
			}
		})
	}
}

func writeReceipt(t *testing.T, dir, rel string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rel), data, 0o600); err != nil {
		t.Fatal(err)
	}
}
