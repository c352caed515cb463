package projections

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
)

func factory() *events.Factory { return eventstest.Factory("test") }

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
	storeID, rootFP := "01234567-89ab-4def-8123-456789abcdef", strings.Repeat("a", 64)
	cc := events.BridgeContract{AdapterVersion: "4", Capability: "native-preflight", BridgeFingerprint: strings.Repeat("c", 64),
		BridgePath: ".codex/hooks.json", OwnedFiles: []events.FileDigest{{Path: ".codex/hooks.json", SHA256: strings.Repeat("d", 64)}},
		ManagedBlocks: []events.BlockDigest{
			{Path: "AGENTS.md", BlockID: "tree-ring-z", SHA256: strings.Repeat("f", 64), LeadingSeparator: "\n"},
			{Path: "AGENTS.md", BlockID: "tree-ring-memory", SHA256: strings.Repeat("e", 64)},
		}}
	lc := events.BridgeContract{AdapterVersion: "3", Capability: "native-preflight", BridgeFingerprint: strings.Repeat("1", 64),
		OwnedFiles: []events.FileDigest{}, ManagedBlocks: []events.BlockDigest{{Path: ".claude/settings.json", BlockID: "tree-ring", SHA256: strings.Repeat("2", 64)}},
		RecordState: "configured-awaiting-proof"}
	evs := []events.Envelope{
		f.Must(events.StoreStream, events.TypeStoreInitialized, &events.StoreInitialized{StoreID: storeID, Format: 1, ProjectRootFingerprint: rootFP, CLIVersion: "0.1.0"}),
		// Written before record_state existed: the record takes the transition's To.
		f.Must(events.HarnessStream("codex"), events.TypeBridgePublished, &events.BridgePublished{
			Transition: events.Transition{From: "unsupported", To: "configured-awaiting-proof"}, HarnessID: "codex",
			AdapterVersion: cc.AdapterVersion, Capability: cc.Capability, BridgeFingerprint: cc.BridgeFingerprint, BridgePath: cc.BridgePath,
			OwnedFiles: cc.OwnedFiles, ManagedBlocks: cc.ManagedBlocks, ChangedPaths: []string{"AGENTS.md"},
		}),
		f.Must(events.HarnessStream("claude-code"), events.TypePublicationReviewRequired, &events.PublicationReviewRequired{
			Transition: events.Transition{From: "unsupported", To: "needs-user-review"}, HarnessID: "claude-code",
			Reason: "existing_file_needs_mutation", Paths: []string{".claude/settings.json"}, Planned: &lc,
		}),
		// A review without a planned contract leaves the record alone.
		f.Must(events.HarnessStream("pi"), events.TypePublicationReviewRequired, &events.PublicationReviewRequired{
			Transition: events.Transition{From: "unsupported", To: "needs-user-review"}, HarnessID: "pi",
			Reason: "existing_file_needs_mutation", Paths: []string{"AGENTS.md"},
		}),
		f.Must(events.StoreStream, events.TypeManifestPublished, &events.ManifestPublished{Path: ".tree-ring/activation.json", SHA256: strings.Repeat("b", 64), Harnesses: []string{"claude-code", "codex"}, CLIVersion: "0.1.0"}),
	}
	kv := NewMemKV()
	foldAll(t, find(ManifestName), kv, evs...)
	// The stored bytes are the projection's own struct, in the layout
	// version 1 has always written: they change only with the fold (and then
	// Version changes too), never with the manifest's wire type.
	want := map[string]string{
		"store":              `{"store_id":"01234567-89ab-4def-8123-456789abcdef","project_root_fingerprint":"` + rootFP + `"}`,
		"record/codex":       `{"published":true,"record":{"state":"configured-awaiting-proof","adapter_version":"4","adapter_capability":"native-preflight","bridge_fingerprint":"` + strings.Repeat("c", 64) + `","bridge_path":".codex/hooks.json","owned_files":[{"path":".codex/hooks.json","sha256":"` + strings.Repeat("d", 64) + `"}],"managed_blocks":[{"path":"AGENTS.md","block_id":"tree-ring-memory","sha256":"` + strings.Repeat("e", 64) + `"},{"path":"AGENTS.md","block_id":"tree-ring-z","sha256":"` + strings.Repeat("f", 64) + `","leading_separator":"\n"}]}}`,
		"record/claude-code": `{"published":false,"record":{"state":"configured-awaiting-proof","adapter_version":"3","adapter_capability":"native-preflight","bridge_fingerprint":"` + strings.Repeat("1", 64) + `","managed_blocks":[{"path":".claude/settings.json","block_id":"tree-ring","sha256":"` + strings.Repeat("2", 64) + `"}]}}`,
		"published":          `{"sha256":"` + strings.Repeat("b", 64) + `","cli_version":"0.1.0","harnesses":["claude-code","codex"]}`,
	}
	if kv.Len() != len(want) {
		t.Fatalf("keys %v, want %d", kv.Keys(), len(want))
	}
	for k, v := range want {
		if got := string(kv.Get([]byte(k))); got != v {
			t.Errorf("%s:\n got %s\nwant %s", k, got, v)
		}
	}
	m, ok, err := ManifestOf(kv)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	// Read back: the record state a pre-record_state event implies, files
	// and blocks in fingerprint order, empty lists absent.
	cc.RecordState = "configured-awaiting-proof"
	cc.ManagedBlocks = []events.BlockDigest{cc.ManagedBlocks[1], cc.ManagedBlocks[0]}
	lc.OwnedFiles = nil
	if m.StoreID != storeID || m.ProjectRootFingerprint != rootFP || len(m.Records) != 2 ||
		!reflect.DeepEqual(m.Records["codex"], events.BridgeRecord{Published: true, Contract: cc}) ||
		!reflect.DeepEqual(m.Records["claude-code"], events.BridgeRecord{Contract: lc}) {
		t.Fatalf("manifest %+v", m)
	}
	if r, ok, _ := ManifestRecordOf(kv, "claude-code"); !ok || r.Published {
		t.Fatal("a planned record folded as published")
	}
	if r, ok, _ := ManifestRecordOf(kv, "codex"); !ok || !r.Published {
		t.Fatal("a published record folded as planned")
	}
	if _, ok, _ := ManifestRecordOf(kv, "pi"); ok {
		t.Fatal("a review without a planned contract folded a record")
	}
	if lp, ok, _ := LastPublished(kv); !ok || lp.SHA256 != strings.Repeat("b", 64) {
		t.Fatalf("last published %+v", lp)
	}
	// Deterministic: the same events fold to the same bytes.
	kv2 := NewMemKV()
	foldAll(t, find(ManifestName), kv2, evs...)
	for _, k := range kv.Keys() {
		if string(kv.Get([]byte(k))) != string(kv2.Get([]byte(k))) {
			t.Fatalf("fold is not deterministic at %s", k)
		}
	}
	// Before store.initialized there is no manifest.
	if _, ok, _ := ManifestOf(NewMemKV()); ok {
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

// store.root_moved moves the store identity to the new root, and only from
// the root the store names.
func TestManifestFoldsRootMoved(t *testing.T) {
	f := factory()
	storeID, oldFP, newFP := "01234567-89ab-4def-8123-456789abcdef", strings.Repeat("a", 64), strings.Repeat("b", 64)
	moved := func(from, to string) events.Envelope {
		return f.Must(events.StoreStream, events.TypeStoreRootMoved, &events.StoreRootMoved{PreviousProjectRootFingerprint: from, ProjectRootFingerprint: to})
	}
	p, kv := find(ManifestName), NewMemKV()
	if err := p.Apply(kv, nil, ptr(moved(oldFP, newFP))); err == nil {
		t.Fatal("a move folded before store.initialized")
	}
	foldAll(t, p, kv, f.Must(events.StoreStream, events.TypeStoreInitialized, &events.StoreInitialized{StoreID: storeID, Format: 1, ProjectRootFingerprint: oldFP, CLIVersion: "0.1.0"}),
		moved(oldFP, newFP))
	m, ok, err := ManifestStoreOf(kv)
	if err != nil || !ok || m != (ManifestStore{StoreID: storeID, ProjectRootFingerprint: newFP}) {
		t.Fatalf("store after the move: %+v %v %v", m, ok, err)
	}
	if err := p.Apply(kv, nil, ptr(moved(oldFP, strings.Repeat("c", 64)))); err == nil {
		t.Fatal("a move from a root the store no longer names folded")
	}
	if m, _, _ := ManifestStoreOf(kv); m.ProjectRootFingerprint != newFP {
		t.Fatalf("a refused move changed the store: %+v", m)
	}
}

func ptr(e events.Envelope) *events.Envelope { return &e }

// The moved-project fixture folds to the new root in the manifest and to
// the new root's proof in the harness states.
func TestMovedProjectFixtureFolds(t *testing.T) {
	data, err := os.ReadFile("../testdata/fixtures/moved-project.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	var evs []events.Envelope
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		e, err := events.DecodeEnvelope([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	mkv, hkv := NewMemKV(), NewMemKV()
	foldAll(t, find(ManifestName), mkv, evs...)
	foldAll(t, find(HarnessesName), hkv, evs...)
	if m, ok, err := ManifestStoreOf(mkv); err != nil || !ok || m.ProjectRootFingerprint != strings.Repeat("d", 64) {
		t.Fatalf("manifest store %+v %v %v", m, ok, err)
	}
	if h, ok, err := HarnessState(hkv, "claude-code"); err != nil || !ok || h.State != "active" {
		t.Fatalf("claude-code %+v %v %v", h, ok, err)
	}
	prefix := NewMemKV() // up to the drift the move records
	foldAll(t, find(HarnessesName), prefix, evs[:8]...)
	if h, _, err := HarnessState(prefix, "claude-code"); err != nil || h.State != "needs-user-review" || h.Reason != "project_root_moved" {
		t.Fatalf("claude-code after the move's drift %+v %v", h, err)
	}
}
