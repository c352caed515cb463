package adapters

import (
	"path/filepath"
	"testing"
)

// TestManifestGolden pins the activation manifest's bytes for every
// publishing adapter's bridge in fixtureContext (-update rewrites
// testdata/adapters/manifest.golden.json), and that they decode back to
// the same manifest.
func TestManifestGolden(t *testing.T) {
	m := Manifest{SchemaVersion: SchemaVersion, ProtocolVersion: ProtocolVersion, StoreID: fixtureContext.StoreID,
		ProjectRootFingerprint: fixtureContext.ProjectRootFingerprint, CLIVersion: "0.1.0-dev", Harnesses: map[string]Record{}}
	for _, a := range All() {
		if a.Publishes() {
			m.Harnesses[a.ID] = a.Record(a.Material(fixtureContext))
		}
	}
	b := m.Encode()
	goldenFile(t, filepath.Join(repo, "testdata", "adapters", "manifest.golden.json"), b)
	back, err := DecodeManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	if !back.SemanticallyEqual(m) || string(back.Encode()) != string(b) {
		t.Fatal("the manifest does not round-trip")
	}
}
