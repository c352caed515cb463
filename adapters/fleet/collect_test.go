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
	if n, _, _ := c.signedPrefix(testStore, pub, genuine); n != 40 {
		t.Fatalf("a genuine run: %d of 40 vouched for", n)
	}
	for _, at := range []int{0, 1, 17, 39} {
		for name, key := range map[string]ed25519.PrivateKey{"unsigned": nil, "another key": forger} {
			prev := events.GenesisHash
			if at > 0 {
				prev = lastHash(t, genuine[at-1])
			}
			cand := append(append([]heldMsg(nil), genuine[:at]...), chain(t, f, uint64(at), prev, 40-at, key)...)
			n, pos, why := c.signedPrefix(testStore, pub, cand)
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
	if n, pos, _ := c.signedPrefix(testStore, pub, append(append([]heldMsg(nil), genuine[:20]...), tail...)); n != 20 || pos != 21 {
		t.Errorf("copied signatures: %d vouched for, refused %d", n, pos)
	}
}
