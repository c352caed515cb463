package events

import (
	"strings"
	"testing"
)

// rootMoved is a sealed store.root_moved envelope (a fuzz seed, too).
func rootMoved(t testing.TB) Envelope {
	t.Helper()
	e, err := testFactory().New(StoreStream, TypeStoreRootMoved, &StoreRootMoved{
		PreviousProjectRootFingerprint: strings.Repeat("a", 64), ProjectRootFingerprint: strings.Repeat("b", 64)})
	if err != nil {
		t.Fatal(err)
	}
	e.Version, e.Position = 2, 2
	e.Seal(GenesisHash)
	return e
}

// store.root_moved: on the store stream, two different fingerprints, decoded
// strictly (an unknown or duplicate key is refused) and round-tripped.
func TestStoreRootMoved(t *testing.T) {
	spec, found := Lookup(TypeStoreRootMoved)
	if !found || spec.StreamPrefix != StoreStream || spec.SchemaVersion != 1 || spec.Moves() {
		t.Fatalf("registration: %+v %v", spec, found)
	}
	e := rootMoved(t)
	got, err := DecodeEnvelope(e.Encode())
	if err != nil {
		t.Fatal(err)
	}
	p, err := DecodePayload(&got)
	if err != nil {
		t.Fatal(err)
	}
	if m := p.(*StoreRootMoved); m.PreviousProjectRootFingerprint != strings.Repeat("a", 64) || m.ProjectRootFingerprint != strings.Repeat("b", 64) {
		t.Fatalf("decoded %+v", m)
	}
	for name, payload := range map[string]string{
		"same root":     `{"previous_project_root_fingerprint":"` + strings.Repeat("a", 64) + `","project_root_fingerprint":"` + strings.Repeat("a", 64) + `"}`,
		"not hex":       `{"previous_project_root_fingerprint":"` + strings.Repeat("A", 64) + `","project_root_fingerprint":"` + strings.Repeat("b", 64) + `"}`,
		"a path":        `{"previous_project_root_fingerprint":"/home/u/proj","project_root_fingerprint":"` + strings.Repeat("b", 64) + `"}`,
		"unknown key":   `{"previous_project_root_fingerprint":"` + strings.Repeat("a", 64) + `","project_root_fingerprint":"` + strings.Repeat("b", 64) + `","path":"/x"}`,
		"duplicate key": `{"project_root_fingerprint":"` + strings.Repeat("c", 64) + `","previous_project_root_fingerprint":"` + strings.Repeat("a", 64) + `","project_root_fingerprint":"` + strings.Repeat("b", 64) + `"}`,
		"missing field": `{"project_root_fingerprint":"` + strings.Repeat("b", 64) + `"}`,
	} {
		bad := e
		bad.Payload = []byte(payload)
		if _, err := DecodePayload(&bad); err == nil {
			t.Errorf("%s: accepted %s", name, payload)
		}
	}
	if _, err := testFactory().New(HarnessStream("codex"), TypeStoreRootMoved, &StoreRootMoved{
		PreviousProjectRootFingerprint: strings.Repeat("a", 64), ProjectRootFingerprint: strings.Repeat("b", 64)}); err == nil {
		t.Error("store.root_moved accepted on a harness stream")
	}
}
