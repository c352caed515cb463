package events

import (
	"errors"
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

// A fresh project root takes the export of a store that names it last:
// initialized there, or moved there; never the root it moved away from.
func TestCheckFreshRootFollowsMoves(t *testing.T) {
	f := testFactory()
	a, b, c := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)
	init := func(fp string) Envelope {
		e, err := f.New(StoreStream, TypeStoreInitialized, &StoreInitialized{StoreID: "3d1a160e-83e4-4b24-b222-ee5b36ff9ce4", Format: 1, ProjectRootFingerprint: fp, CLIVersion: "0.1.0"})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	move := func(from, to string) Envelope {
		e, err := f.New(StoreStream, TypeStoreRootMoved, &StoreRootMoved{PreviousProjectRootFingerprint: from, ProjectRootFingerprint: to})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, tc := range []struct {
		name string
		root string
		envs []Envelope
		ok   bool
	}{
		{"initialized here", a, []Envelope{init(a)}, true},
		{"initialized elsewhere", b, []Envelope{init(a)}, false},
		{"moved here", b, []Envelope{init(a), move(a, b)}, true},
		{"moved here twice", c, []Envelope{init(a), move(a, b), move(b, c)}, true},
		{"moved away", a, []Envelope{init(a), move(a, b)}, false},
		{"a move from another root", b, []Envelope{init(a), move(c, b)}, false},
	} {
		err := CheckFreshRoot(tc.root, tc.envs)
		var fe *ForeignRootError
		if tc.ok && err != nil || !tc.ok && !errors.As(err, &fe) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
