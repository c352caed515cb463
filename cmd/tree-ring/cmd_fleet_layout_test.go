package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/projections"
)

// A replica an older collector wrote holds its projections at that build's
// layouts. The replica has no init to run: collect is what migrates it
// (its writing open may), so collect must get there, and the read
// commands name collect, not init, until it has.
func TestFleetReplicaAtAnOldLayout(t *testing.T) {
	srv := startNATS(t)
	p := fleetProject(t, 54)
	id := storeIDOf(t, filepath.Join(p.dir, ".tree-ring"))
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	replicas := t.TempDir()
	p.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", replicas)
	proj := projections.All()[0]
	downgradeProjection(t, filepath.Join(replicas, id, "ledger.db"), proj.Name(), proj.Version()-1)
	for _, args := range [][]string{{"fleet", "verify", "--from", replicas}, {"fleet", "status", "--from", replicas}} {
		r := p.run("", args...)
		if out := r.stdout + r.stderr; strings.Contains(out, "tree-ring init") || !strings.Contains(out, "fleet collect") {
			t.Fatalf("%v on a replica at an old layout: exit %d\n%s", args, r.code, out)
		}
	}
	if r := p.hook("claude-code", p.payload("claude-code", "session-start.json", nil)); r.code != 0 {
		t.Fatalf("hook: %s", r.stderr)
	}
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	p.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", replicas)
	sameLedger(t, filepath.Join(p.dir, ".tree-ring"), filepath.Join(replicas, id))
	if out := p.ok("", "fleet", "verify", "--from", replicas); !strings.Contains(out, "verified store "+id) {
		t.Fatalf("verify after collect migrated the replica:\n%s", out)
	}
}
