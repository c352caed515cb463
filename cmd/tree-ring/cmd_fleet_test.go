package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters/fleet/fleettest"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/projections"
)

// startNATS runs an embedded JetStream server on loopback for one test.
func startNATS(t *testing.T) *fleettest.Server {
	t.Helper()
	s, err := fleettest.Start(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// fleetProject is an initialized project with an active claude-code
// (one session start), whose ids carry marker k so that several projects
// publishing to one stream never share an event id.
func fleetProject(t *testing.T, k int) *hp {
	t.Helper()
	p := newHP(t, ".claude")
	p.n = uint64(k) * 10_000_000
	p.init()
	if r := p.hook("claude-code", p.payload("claude-code", "session-start.json", nil)); r.code != 0 {
		t.Fatalf("hook: %s", r.stderr)
	}
	return p
}

// ledgerBytes is every stored envelope of a root, in order.
func ledgerBytes(t *testing.T, root string) [][]byte {
	t.Helper()
	st, err := bolt.OpenRoot(root, bolt.Options{ReadOnly: true, Projections: projections.All()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out [][]byte
	if err := st.ScanRaw(context.Background(), 0, func(_ uint64, raw []byte) error {
		out = append(out, append([]byte(nil), raw...))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func storeIDOf(t *testing.T, root string) string {
	t.Helper()
	st, err := bolt.OpenRoot(root, bolt.Options{ReadOnly: true, Projections: projections.All()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var id string
	if err := st.View(func(r *bolt.Reader) error {
		ms, _, err := storeIdentity(r)
		id = ms.StoreID
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return id
}

// sameLedger fails unless the replica holds exactly the project's events.
func sameLedger(t *testing.T, project, replica string) {
	t.Helper()
	want, got := ledgerBytes(t, project), ledgerBytes(t, replica)
	if len(got) != len(want) {
		t.Fatalf("replica %s holds %d events, the project %d", replica, len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("position %d differs:\n%s\n%s", i+1, got[i], want[i])
		}
	}
}

func TestFleetPublishCollectOne(t *testing.T) {
	srv := startNATS(t)
	p := fleetProject(t, 1)
	root := filepath.Join(p.dir, ".tree-ring")
	before := ledgerBytes(t, root)
	out := p.ok("", "--json", "fleet", "publish", "--nats", srv.URL())
	var res struct {
		OK        bool   `json:"ok"`
		Published uint64 `json:"published"`
		Head      uint64 `json:"head"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || !res.OK || res.Published != uint64(len(before)) {
		t.Fatalf("publish: %s", out)
	}
	if after := ledgerBytes(t, root); len(after) != len(before) {
		t.Fatalf("publish appended %d events to the project's ledger", len(after)-len(before))
	}
	out = p.ok("", "--json", "fleet", "publish", "--nats", srv.URL())
	if !strings.Contains(out, `"published":0`) {
		t.Fatalf("second publish: %s", out)
	}
	dir := t.TempDir()
	out = p.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", dir)
	id := storeIDOf(t, root)
	if !strings.Contains(out, id) {
		t.Fatalf("collect: %s", out)
	}
	sameLedger(t, root, filepath.Join(dir, id))
	if _, err := os.Stat(filepath.Join(dir, id, stopFile)); err == nil {
		t.Fatal("replica stopped")
	}
}
