package projections

import (
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events"
)

func factory() *events.Factory {
	var n byte
	return &events.Factory{
		Now:   func() time.Time { return time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC) },
		NewID: func() ulid.ULID { n++; var id ulid.ULID; id[15] = n; id[0] = 1; return id },
		Actor: "test",
	}
}

func foldAll(t *testing.T, p Projection, kv KV, evs ...events.Envelope) {
	t.Helper()
	for i := range evs {
		if !p.Handles(evs[i].Type) {
			continue
		}
		if err := p.Apply(kv, nil, &evs[i]); err != nil {
			t.Fatalf("%s: %v", evs[i].Type, err)
		}
	}
}

func find(name string) Projection {
	for _, p := range All() {
		if p.Name() == name {
			return p
		}
	}
	return nil
}

func TestManifestProjection(t *testing.T) {
	f := factory()
	ctx := adapters.Context{StoreID: "01234567-89ab-4def-8123-456789abcdef", ProjectRootFingerprint: strings.Repeat("a", 64)}
	codex, _ := adapters.Lookup("codex")
	claude, _ := adapters.Lookup("claude-code")
	cr := codex.Record(codex.Material(ctx))
	cc := ContractOf(cr)
	lr := claude.Record(claude.Material(ctx))
	lc := ContractOf(lr)
	evs := []events.Envelope{
		f.Must(events.StoreStream, events.TypeStoreInitialized, &events.StoreInitialized{StoreID: ctx.StoreID, Format: 1, ProjectRootFingerprint: ctx.ProjectRootFingerprint, CLIVersion: "0.1.0"}),
		f.Must(events.HarnessStream("codex"), events.TypeBridgePublished, &events.BridgePublished{
			Transition: events.Transition{From: "unsupported", To: "configured-awaiting-proof"}, HarnessID: "codex",
			AdapterVersion: cc.AdapterVersion, Capability: cc.Capability, BridgeFingerprint: cc.BridgeFingerprint, BridgePath: cc.BridgePath,
			OwnedFiles: cc.OwnedFiles, ManagedBlocks: cc.ManagedBlocks, ChangedPaths: []string{"AGENTS.md"}, RecordState: cc.RecordState,
		}),
		f.Must(events.HarnessStream("claude-code"), events.TypePublicationReviewRequired, &events.PublicationReviewRequired{
			Transition: events.Transition{From: "unsupported", To: "needs-user-review"}, HarnessID: "claude-code",
			Reason: adapters.ReasonExistingFile, Paths: []string{".claude/settings.json"}, Planned: &lc,
		}),
		f.Must(events.StoreStream, events.TypeManifestPublished, &events.ManifestPublished{Path: adapters.ManifestPath, SHA256: strings.Repeat("b", 64), Harnesses: []string{"claude-code", "codex"}, CLIVersion: "0.1.0"}),
	}
	kv := NewMemKV()
	foldAll(t, find(ManifestName), kv, evs...)
	m, ok, err := Manifest(kv, "0.2.0")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if m.StoreID != ctx.StoreID || m.CLIVersion != "0.2.0" || !m.Harnesses["codex"].Equal(cr) || !m.Harnesses["claude-code"].Equal(lr) {
		t.Fatalf("manifest %+v", m)
	}
	if r, _, _ := ManifestRecordOf(kv, "claude-code"); r.Published {
		t.Fatal("a planned record folded as published")
	}
	if r, _, _ := ManifestRecordOf(kv, "codex"); !r.Published {
		t.Fatal("a published record folded as planned")
	}
	if lp, ok, _ := LastPublished(kv); !ok || lp.SHA256 != strings.Repeat("b", 64) {
		t.Fatalf("last published %+v", lp)
	}
	// Deterministic: the same events fold to the same bytes.
	kv2 := NewMemKV()
	foldAll(t, find(ManifestName), kv2, evs...)
	m2, _, _ := Manifest(kv2, "0.2.0")
	if string(m.Encode()) != string(m2.Encode()) {
		t.Fatal("fold is not deterministic")
	}
	// Before store.initialized there is no manifest.
	if _, ok, _ := Manifest(NewMemKV(), "x"); ok {
		t.Fatal("manifest without a store")
	}
}

func TestHarnessesProjection(t *testing.T) {
	f := factory()
	hs := events.HarnessStream("codex")
	evs := []events.Envelope{
		f.Must(hs, events.TypeHarnessDetected, &events.HarnessDetected{Transition: events.Transition{From: "unsupported", To: "unsupported"}, HarnessID: "codex", AdapterVersion: "4", Capability: "native-preflight", Markers: []string{".codex"}}),
		f.Must(hs, events.TypePublicationReviewRequired, &events.PublicationReviewRequired{Transition: events.Transition{From: "unsupported", To: "needs-user-review"}, HarnessID: "codex", Reason: "existing_file_needs_mutation", Paths: []string{"AGENTS.md"}}),
	}
	p := find(HarnessesName)
	if p.Handles(events.TypeManifestPublished) || !p.Handles(events.TypeBridgePublished) || !p.Handles(events.TypePreflightSucceeded) {
		t.Fatal("Handles: every harness event with a transition, nothing else")
	}
	kv := NewMemKV()
	foldAll(t, p, kv, evs...)
	h, ok, err := HarnessState(kv, "codex")
	if err != nil || !ok || h.State != "needs-user-review" || h.Reason != "existing_file_needs_mutation" || h.Markers[0] != ".codex" {
		t.Fatalf("%+v %v %v", h, ok, err)
	}
	foldAll(t, p, kv, f.Must(hs, events.TypeBridgePublished, &events.BridgePublished{
		Transition: events.Transition{From: "needs-user-review", To: "configured-awaiting-proof"}, HarnessID: "codex",
		AdapterVersion: "4", Capability: "native-preflight", BridgeFingerprint: strings.Repeat("c", 64),
	}))
	h, _, _ = HarnessState(kv, "codex")
	if h.State != "configured-awaiting-proof" || h.Reason != "" || len(h.Paths) != 0 || h.Markers[0] != ".codex" {
		t.Fatalf("after publish %+v", h)
	}
	if ids, _ := HarnessIDs(kv); len(ids) != 1 || ids[0] != "codex" {
		t.Fatalf("ids %v", ids)
	}
	if _, ok, _ := HarnessState(kv, "pi"); ok {
		t.Fatal("state for a harness without events")
	}
}
