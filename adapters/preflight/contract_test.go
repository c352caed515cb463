package preflight

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

// installed publishes harness id's exact bridge into a temporary project
// and returns the pinned root, the manifest naming it and the project dir.
func installed(t *testing.T, id string) (*adapters.ProjectRoot, adapters.Manifest, string) {
	t.Helper()
	dir, err := adapters.CanonicalProjectRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, err := adapters.OpenProjectRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	a, _ := adapters.Lookup(id)
	c := adapters.Context{StoreID: "01234567-89ab-4def-8123-456789abcdef", ProjectRootFingerprint: adapters.ProjectRootFingerprint(dir)}
	mat := a.Material(c)
	for _, f := range mat.Files {
		if err := root.CreateFile(f.Path, f.Data, 0o644, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range mat.Blocks {
		if err := root.CreateFile(b.Path, b.Whole, 0o644, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m := adapters.Manifest{SchemaVersion: 1, ProtocolVersion: 1, StoreID: c.StoreID, ProjectRootFingerprint: c.ProjectRootFingerprint,
		CLIVersion: "t", Harnesses: map[string]adapters.Record{id: a.Record(mat)}}
	return root, m, dir
}

func TestCheckActivationContract(t *testing.T) {
	root, m, dir := installed(t, "codex")
	a, _ := adapters.Lookup("codex")
	fp := adapters.ProjectRootFingerprint(dir)
	c, err := Check(root, m, a, fp)
	if err != nil || c.Recomputed != m.Harnesses["codex"].BridgeFingerprint || len(c.Changed) != 0 {
		t.Fatalf("installed bridge: %+v %v", c, err)
	}
	if _, err := Check(root, m, a, adapters.ProjectRootFingerprint("/elsewhere")); !errors.Is(err, ErrRootMismatch) {
		t.Errorf("root: %v", err)
	}
	pi, _ := adapters.Lookup("pi")
	if _, err := Check(root, m, pi, fp); !errors.Is(err, ErrNoRecord) {
		t.Errorf("no record: %v", err)
	}
	stale := m
	rec := m.Harnesses["codex"]
	rec.AdapterVersion = "3"
	stale.Harnesses = map[string]adapters.Record{"codex": rec}
	if _, err := Check(root, stale, a, fp); !errors.Is(err, ErrStale) {
		t.Errorf("stale version: %v", err)
	}
	rec = m.Harnesses["codex"]
	rec.BridgeFingerprint = adapters.SHA256Hex([]byte("x"))
	stale.Harnesses = map[string]adapters.Record{"codex": rec}
	if _, err := Check(root, stale, a, fp); !errors.Is(err, ErrStale) {
		t.Errorf("inconsistent fingerprint: %v", err)
	}
	// A record whose own digests are not the bridge's, fingerprinted
	// consistently: the bridge changed, the record is current.
	rec = m.Harnesses["codex"]
	rec.OwnedFiles = append([]events.FileDigest(nil), rec.OwnedFiles...)
	rec.OwnedFiles[0].SHA256 = adapters.SHA256Hex([]byte("other"))
	rec.BridgeFingerprint = adapters.BridgeFingerprint("codex", rec.AdapterVersion, rec.OwnedFiles, rec.ManagedBlocks)
	stale.Harnesses = map[string]adapters.Record{"codex": rec}
	var bc *BridgeChangedError
	if _, err := Check(root, stale, a, fp); !errors.As(err, &bc) || len(bc.Paths) != 1 || bc.Paths[0] != rec.OwnedFiles[0].Path {
		t.Errorf("record digests differ from the bridge: %v", err)
	}
	// The same, fingerprinted inconsistently: stale comes first.
	rec.BridgeFingerprint = m.Harnesses["codex"].BridgeFingerprint
	stale.Harnesses = map[string]adapters.Record{"codex": rec}
	if _, err := Check(root, stale, a, fp); !errors.Is(err, ErrStale) {
		t.Errorf("inconsistent fingerprint, bridge changed: %v", err)
	}
	os.WriteFile(filepath.Join(dir, ".codex", "hooks.json"), []byte("{}\n"), 0o644)
	os.Remove(filepath.Join(dir, "AGENTS.md"))
	if _, err := Check(root, m, a, fp); !errors.As(err, &bc) || len(bc.Paths) != 2 || bc.Paths[0] != ".codex/hooks.json" || bc.Paths[1] != "AGENTS.md" {
		t.Errorf("tampered bridge: %v", err)
	}
}

func TestEligibleAndPassive(t *testing.T) {
	for _, s := range fsm.States {
		// failed: a failed preflight stands until the next one succeeds.
		want := s == fsm.ConfiguredAwaitingProof || s == fsm.Active || s == fsm.ActiveIsolated || s == fsm.Failed || s == fsm.NeedsTrust
		if Eligible("codex", s) != want {
			t.Errorf("codex in %s", s)
		}
		wantAZ := s == fsm.ConfiguredAwaitingProof || s == fsm.Active || s == fsm.ActiveIsolated || s == fsm.Failed || s == fsm.NeedsPlugin
		if Eligible("agent-zero", s) != wantAZ {
			t.Errorf("agent-zero in %s", s)
		}
	}
	_, m, _ := installed(t, "agent-zero")
	rec := m.Harnesses["agent-zero"]
	if !PassiveBinding(rec) {
		t.Fatalf("the published binding is not passive: %+v", rec)
	}
	for name, mut := range map[string]func(*adapters.Record){
		"state":       func(r *adapters.Record) { r.State = string(fsm.ConfiguredAwaitingProof) },
		"bridge path": func(r *adapters.Record) { r.BridgePath = "x" },
		"two files": func(r *adapters.Record) {
			r.OwnedFiles = append(r.OwnedFiles, events.FileDigest{Path: "y", SHA256: r.OwnedFiles[0].SHA256})
		},
		"a block": func(r *adapters.Record) { r.ManagedBlocks = []events.BlockDigest{{Path: "z"}} },
	} {
		r := rec
		r.OwnedFiles = append([]events.FileDigest(nil), rec.OwnedFiles...)
		mut(&r)
		if PassiveBinding(r) {
			t.Errorf("%s: still passive", name)
		}
	}
}
