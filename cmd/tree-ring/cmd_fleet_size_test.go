package main

import (
	"path/filepath"
	"testing"

	"github.com/tree-ring/tree-ring/adapters/fleet"
	"github.com/tree-ring/tree-ring/adapters/fleet/fleettest"
)

// What a store's history costs in the stream (docs/fleet.md, "Deploying
// on an existing NATS cluster", Retention): a project's real events (init,
// its key, session starts, memories, a label, a rotation), published;
// the stream's bytes per event stay within the documented bound, and the
// envelopes are what most of it is. `go test ./cmd/tree-ring -run
// TestFleetStreamBytesPerEvent -v` prints the figures.
func TestFleetStreamBytesPerEvent(t *testing.T) {
	srv := startNATS(t)
	p := fleetProject(t, 54)
	for range 20 {
		if r := p.hook("claude-code", p.payload("claude-code", "session-start.json", nil)); r.code != 0 {
			t.Fatalf("hook: %s", r.stderr)
		}
	}
	for _, m := range []string{"Deploys go through the staging gate", "Prefer table tests", "Run go vet before committing"} {
		p.ok("", "remember", m, "--event-type", "decision", "--project", "demo")
	}
	p.ok("", "fleet", "label", "ci-runner-7")
	p.ok("", "fleet", "rotate-key")
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	raws := ledgerBytes(t, filepath.Join(p.dir, ".tree-ring"))
	envelope := 0
	for _, r := range raws {
		envelope += len(r)
	}
	bytes, msgs, err := fleettest.StreamBytes(srv.URL(), fleet.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if msgs != uint64(len(raws)) {
		t.Fatalf("the stream holds %d messages for %d events", msgs, len(raws))
	}
	perEvent, perEnvelope := float64(bytes)/float64(msgs), float64(envelope)/float64(len(raws))
	t.Logf("%d events: %.0f bytes per event in the stream, of which %.0f the envelope and %.0f subject, headers and the server's record", msgs, perEvent, perEnvelope, perEvent-perEnvelope)
	// docs/fleet.md sizes max_bytes at about 1,350 bytes per event, 480 of
	// them beside the envelope.
	if perEvent > 1500 || perEvent-perEnvelope > 550 {
		t.Fatalf("%.0f bytes per event (%.0f beside the envelope): docs/fleet.md's figure is out of date", perEvent, perEvent-perEnvelope)
	}
}
