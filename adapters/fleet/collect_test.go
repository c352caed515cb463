package fleet

import (
	"bytes"
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tree-ring/tree-ring/adapters/fleet/fleetsign"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
)

// fakeMsg is a delivered message as signedPrefix reads it.
type fakeMsg struct {
	jetstream.Msg
	data []byte
	hdr  nats.Header
}

func (m fakeMsg) Data() []byte         { return m.data }
func (m fakeMsg) Headers() nats.Header { return m.hdr }

const testStore = "3d1a160e-83e4-4b24-b222-ee5b36ff9ce4"

// chain builds n chained run.started events after prev (position after+1
// ...), each signed by sign (nil: unsigned).
func chain(t *testing.T, f *events.Factory, after uint64, prev string, n int, sign ed25519.PrivateKey) []heldMsg {
	t.Helper()
	var out []heldMsg
	for i := range n {
		id := f.NewID()
		e, err := f.New(events.RunStream(id.String()), events.TypeRunStarted, &events.RunStarted{
			RunID: id.String(), ScopeKey: "0123456789abcdef01234567", Command: events.RunCmdEventsImport,
			Stage: "append", PID: i + 1, StartedAt: events.FormatRunTime(eventstest.Epoch),
		})
		if err != nil {
			t.Fatal(err)
		}
		e.ID, e.Version, e.Position = id, 1, after+uint64(i)+1
		e.Seal(prev)
		prev = e.Hash
		h := nats.Header{}
		if sign != nil {
			h.Set(HeaderSignature, fleetsign.Sign(sign, testStore, e.Position, e.Hash))
		}
		out = append(out, heldMsg{pos: e.Position, msg: fakeMsg{data: e.Encode(), hdr: h}})
	}
	return out
}

func lastHash(t *testing.T, m heldMsg) string {
	ref, err := events.DecodeStoredRef(m.msg.Data())
	if err != nil {
		t.Fatal(err)
	}
	return ref.Hash
}

// One signature stands for a linked run, and a forged tail anywhere in a
// run is found at its first event: the host's events before it pass, the
// forged one and everything after it do not.
func TestSignedPrefix(t *testing.T) {
	pub, host, _ := ed25519.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{1}, 64)))
	_, forger, _ := ed25519.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{2}, 64)))
	f := &events.Factory{Now: eventstest.Clock(eventstest.Epoch, time.Second), NewID: eventstest.IDs(5), Actor: "cli"}
	c := &collector{}
	genuine := chain(t, f, 0, events.GenesisHash, 40, host)
	if n, _, _, _ := c.signedPrefix(testStore, one(pub), 0, genuine); n != 40 {
		t.Fatalf("a genuine run: %d of 40 vouched for", n)
	}
	for _, at := range []int{0, 1, 17, 39} {
		for name, key := range map[string]ed25519.PrivateKey{"unsigned": nil, "another key": forger} {
			prev := events.GenesisHash
			if at > 0 {
				prev = lastHash(t, genuine[at-1])
			}
			cand := append(append([]heldMsg(nil), genuine[:at]...), chain(t, f, uint64(at), prev, 40-at, key)...)
			n, _, pos, why := c.signedPrefix(testStore, one(pub), 0, cand)
			if n != at || pos != uint64(at+1) || why == "" {
				t.Errorf("%s from position %d: %d vouched for, refused %d (%s)", name, at+1, n, pos, why)
			}
		}
	}
	// The forger's tail signed by the host's key for other hashes (copied
	// signatures) is no better.
	tail := chain(t, f, 20, lastHash(t, genuine[19]), 20, nil)
	for i := range tail {
		tail[i].msg.(fakeMsg).hdr.Set(HeaderSignature, genuine[20+i].msg.Headers().Get(HeaderSignature))
	}
	if n, _, pos, _ := c.signedPrefix(testStore, one(pub), 0, append(append([]heldMsg(nil), genuine[:20]...), tail...)); n != 20 || pos != 21 {
		t.Errorf("copied signatures: %d vouched for, refused %d", n, pos)
	}
}

func one(k ed25519.PublicKey) fleetsign.Chain { return fleetsign.Chain{Keys: []ed25519.PublicKey{k}} }

// rotationMsg is the store.key_rotated at position after+1 moving the
// store from prev to next, its message signed by sign.
func rotationMsg(t *testing.T, f *events.Factory, after uint64, prevHash string, p events.StoreKeyRotated, sign ed25519.PrivateKey) heldMsg {
	t.Helper()
	e, err := f.New(events.StoreStream, events.TypeStoreKeyRotated, &p)
	if err != nil {
		t.Fatal(err)
	}
	e.Version, e.Position = 3, after+1
	e.Seal(prevHash)
	h := nats.Header{}
	h.Set(HeaderSignature, fleetsign.Sign(sign, testStore, e.Position, e.Hash))
	return heldMsg{pos: e.Position, msg: fakeMsg{data: e.Encode(), hdr: h}}
}

// A rotation ends its run: the events up to and including it verify
// under the old key, those after it under the new one. A rotation the
// previous key did not sign, or events after it signed by the old key,
// are refused at their position; redeliveries at or below the replica's
// head need no key.
func TestSignedPrefixRotation(t *testing.T) {
	seed := func(b byte) ed25519.PrivateKey {
		_, k, _ := ed25519.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{b}, 64)))
		return k
	}
	k0, k1, forger := seed(1), seed(2), seed(3)
	f := &events.Factory{Now: eventstest.Clock(eventstest.Epoch, time.Second), NewID: eventstest.IDs(6), Actor: "cli"}
	c := &collector{}
	before := chain(t, f, 0, events.GenesisHash, 10, k0)
	build := func(p events.StoreKeyRotated, msgKey, afterKey ed25519.PrivateKey) []heldMsg {
		rot := rotationMsg(t, f, 10, lastHash(t, before[9]), p, msgKey)
		after := chain(t, f, 11, lastHash(t, rot), 10, afterKey)
		return append(append(append([]heldMsg(nil), before...), rot), after...)
	}
	good := build(fleetsign.Rotation(testStore, k0, k1), k0, k1)
	n, rots, pos, why := c.signedPrefix(testStore, one(k0.Public().(ed25519.PublicKey)), 0, good)
	if n != 21 || len(rots) != 1 || rots[0].index != 10 || rots[0].pos != 11 || !rots[0].key.Equal(k1.Public()) {
		t.Fatalf("a genuine rotation: %d of 21 vouched for, rotations %+v (refused %d: %s)", n, rots, pos, why)
	}
	// The replica already holds the first 15 (its chain rotated): the
	// redeliveries among them need no key, the rest the new one.
	rotated := fleetsign.Chain{Keys: []ed25519.PublicKey{k0.Public().(ed25519.PublicKey), k1.Public().(ed25519.PublicKey)}, Rotations: []uint64{11}}
	if n, _, pos, why := c.signedPrefix(testStore, rotated, 15, good); n != 21 {
		t.Fatalf("redeliveries after a rotation: %d of 21 (refused %d: %s)", n, pos, why)
	}

	forged := fleetsign.Rotation(testStore, forger, k1)
	forged.PreviousKey = fleetsign.EncodeKey(k0.Public().(ed25519.PublicKey))
	for name, c2 := range map[string]struct {
		cand   []heldMsg
		n      int
		pos    uint64
		reason string
	}{
		"rotation by another key":           {build(fleetsign.Rotation(testStore, forger, k1), forger, k1), 10, 11, "the signature does not verify"},
		"payload not signed by the old key": {build(forged, k0, k1), 10, 11, "not signed by the store's previous key"},
		"not signed by the new key": {build(func() events.StoreKeyRotated {
			p := fleetsign.Rotation(testStore, k0, k1)
			p.Signature = fleetsign.Rotation(testStore, k0, forger).Signature
			return p
		}(), k0, k1), 10, 11, "not signed by its new key"},
		"old key after the rotation": {build(fleetsign.Rotation(testStore, k0, k1), k0, k0), 11, 12, "the signature does not verify"},
	} {
		n, rots, pos, why := c.signedPrefix(testStore, one(k0.Public().(ed25519.PublicKey)), 0, c2.cand)
		if n != c2.n || pos != c2.pos || !bytes.Contains([]byte(why), []byte(c2.reason)) {
			t.Errorf("%s: %d vouched for, refused %d (%s), rotations %d; want %d, %d, %q", name, n, pos, why, len(rots), c2.n, c2.pos, c2.reason)
		}
	}
}
