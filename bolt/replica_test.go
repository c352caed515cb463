package bolt

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/projections"
)

// sourceRaws returns the stored bytes of the tamper fixture's five events,
// as a publisher would send them.
func sourceRaws(t *testing.T) ([][]byte, []projections.Projection) {
	t.Helper()
	path, projs := tamperFixture(t)
	st, err := Open(path, Options{ReadOnly: true, Projections: projs})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var raws [][]byte
	if err := st.ScanRaw(bg, 0, func(_ uint64, raw []byte) error {
		raws = append(raws, append([]byte(nil), raw...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return raws, projs
}

// resealed decodes raw, lets change alter it, re-hashes it and encodes it:
// a well-formed envelope that is not the original's.
func resealed(t *testing.T, raw []byte, change func(e *events.Envelope)) []byte {
	t.Helper()
	e, err := events.DecodeEnvelope(raw)
	if err != nil {
		t.Fatal(err)
	}
	change(&e)
	e.Hash = e.ComputeHash()
	return e.Encode()
}

func TestReplicateKeepsTheChain(t *testing.T) {
	raws, projs := sourceRaws(t)
	st, _ := openTest(t, Options{Projections: projs})
	res, err := st.Replicate(bg, raws)
	if err != nil || res != (ReplicaBatch{Appended: 5}) {
		t.Fatalf("replicate: %+v %v", res, err)
	}
	var got [][]byte
	if err := st.ScanRaw(bg, 0, func(_ uint64, raw []byte) error {
		got = append(got, append([]byte(nil), raw...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(raws) {
		t.Fatalf("replica holds %d events, want %d", len(got), len(raws))
	}
	for i := range raws {
		if !bytes.Equal(got[i], raws[i]) {
			t.Errorf("position %d: replica bytes differ from the source:\n%s\n%s", i+1, got[i], raws[i])
		}
	}
	src, _ := events.DecodeStored(raws[len(raws)-1])
	if pos, hash, _ := st.Head(); pos != 5 || hash != src.Hash {
		t.Errorf("head %d %s, want 5 %s", pos, hash, src.Hash)
	}
	if _, err := st.Verify(bg); err != nil {
		t.Fatalf("replica does not verify: %v", err)
	}
	// A redelivery of everything is five duplicates and no commit.
	before := txID(t, st)
	res, err = st.Replicate(bg, raws)
	if err != nil || res != (ReplicaBatch{Duplicates: 5}) {
		t.Fatalf("redelivery: %+v %v", res, err)
	}
	if txID(t, st) != before {
		t.Error("a batch of duplicates committed a transaction")
	}
}

func TestReplicateRefuses(t *testing.T) {
	raws, projs := sourceRaws(t)
	oneByte := append([]byte(nil), raws[2]...)
	i := bytes.Index(oneByte, []byte(`"payload":{`)) + len(`"payload":{`) + 2
	oneByte[i] ^= 0x01 // inside the first payload key
	cases := []struct {
		name     string
		batch    [][]byte
		appended int
		dups     int
		kind     ReplicaErrorKind
		position uint64
		detail   string
	}{
		{"gap", [][]byte{raws[0], raws[2]}, 1, 0, ReplicaGap, 3, "head is position 1"},
		{"reordered", [][]byte{raws[1], raws[0]}, 0, 0, ReplicaGap, 2, "head is position 0"},
		{"one byte edited", [][]byte{raws[0], raws[1], oneByte}, 2, 0, ReplicaInvalid, 0, ""},
		{"resealed without the chain", [][]byte{raws[0], resealed(t, raws[1], func(e *events.Envelope) { e.PrevHash = strings.Repeat("1", 64) })},
			1, 0, ReplicaBrokenChain, 2, "does not link"},
		{"other event at a held position", [][]byte{raws[0], raws[1], resealed(t, raws[1], func(e *events.Envelope) { e.Actor = "forged" })},
			2, 0, ReplicaConflict, 2, "differs"},
		{"duplicate then refusal", [][]byte{raws[0], raws[0], raws[2]}, 1, 1, ReplicaGap, 3, ""},
		{"not canonical", [][]byte{append(append([]byte(nil), raws[0]...), ' ')}, 0, 0, ReplicaInvalid, 1, "canonical"},
		{"stream version skipped", [][]byte{raws[0], resealed(t, raws[1], func(e *events.Envelope) { e.Version = 7 })},
			1, 0, ReplicaBrokenChain, 2, "version 7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, _ := openTest(t, Options{Projections: projs})
			res, err := st.Replicate(bg, c.batch)
			if err != nil {
				t.Fatal(err)
			}
			if res.Appended != c.appended || res.Duplicates != c.dups || res.Refused == nil {
				t.Fatalf("got %+v, want %d appended, %d duplicates and a refusal", res, c.appended, c.dups)
			}
			r := res.Refused
			if r.Kind != c.kind || (c.position != 0 && r.Position != c.position) || !strings.Contains(r.Error(), c.detail) {
				t.Errorf("refusal %v (kind %s, position %d), want kind %s position %d mentioning %q", r, r.Kind, r.Position, c.kind, c.position, c.detail)
			}
			if pos, _, _ := st.Head(); pos != uint64(c.appended) {
				t.Errorf("head %d after the refusal, want %d (accepted events committed)", pos, c.appended)
			}
		})
	}
}
