package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/cmd/internal/fleetstatus"
)

// fleetStatusRows is `fleet status --json` with args, one row per store
// (the stores here have one harness each).
func fleetStatusRows(t *testing.T, p *hp, args ...string) map[string]fleetstatus.Row {
	t.Helper()
	var st struct {
		OK   bool              `json:"ok"`
		Rows []fleetstatus.Row `json:"rows"`
	}
	out := p.ok("", append([]string{"--json", "fleet", "status"}, args...)...)
	if err := json.Unmarshal([]byte(out), &st); err != nil || !st.OK {
		t.Fatalf("status %v: %v\n%s", args, err, out)
	}
	rows := map[string]fleetstatus.Row{}
	for _, r := range st.Rows {
		rows[r.StoreID] = r
	}
	return rows
}

func ptrIs(p *uint64, want uint64) bool { return p != nil && *p == want }

// TestFleetStatusLiveLag: publish, collect, publish more; then status
// --nats reads the stream's heads (tree-ring-fleet, without consuming:
// the next collect still gets every new event) and shows the lag, while
// status without --nats keeps saying what the last collect knew.
func TestFleetStatusLiveLag(t *testing.T) {
	srv := startNATS(t)
	p := fleetProject(t, 1)
	root := filepath.Join(p.dir, ".tree-ring")
	id := storeIDOf(t, root)
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	dir := t.TempDir()
	p.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", dir)
	n1 := uint64(len(ledgerBytes(t, root)))
	if r := p.hook("claude-code", p.payload("claude-code", "session-start.json", nil)); r.code != 0 {
		t.Fatalf("hook: %s", r.stderr)
	}
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	n2 := uint64(len(ledgerBytes(t, root)))
	if n2 <= n1 {
		t.Fatalf("the second session start added no event (%d, %d)", n1, n2)
	}
	// A second store the stream holds and no replica does.
	q := fleetProject(t, 2)
	q.ok("", "fleet", "publish", "--nats", srv.URL())
	qid, qn := storeIDOf(t, filepath.Join(q.dir, ".tree-ring")), uint64(len(ledgerBytes(t, filepath.Join(q.dir, ".tree-ring"))))

	last := fleetStatusRows(t, p, "--from", dir)[id]
	if last.ReplicaHead != n1 || !ptrIs(last.StreamHead, n1) || !ptrIs(last.Lag, 0) || last.CollectedAt == nil ||
		last.StreamHeadAt == nil || !last.StreamHeadAt.Equal(*last.CollectedAt) {
		t.Fatalf("status as of the last collect: %+v, want replica and stream head %d, lag 0", last, n1)
	}
	if _, ok := fleetStatusRows(t, p, "--from", dir)[qid]; ok {
		t.Fatal("status without --nats knows a store no collect saw")
	}

	live := fleetStatusRows(t, p, "--from", dir, "--nats", srv.URL())
	got := live[id]
	if got.ReplicaHead != n1 || !ptrIs(got.StreamHead, n2) || !ptrIs(got.Lag, n2-n1) || got.Replica != "ok" ||
		got.CollectedAt == nil || !got.CollectedAt.Equal(*last.CollectedAt) || got.StreamHeadAt == nil || !got.StreamHeadAt.After(*got.CollectedAt) {
		t.Fatalf("live status: %+v, want replica head %d, stream head %d, lag %d, the last collect's time %v", got, n1, n2, n2-n1, last.CollectedAt)
	}
	if g := live[qid]; g.Replica != "not collected" || g.ReplicaHead != 0 || !ptrIs(g.StreamHead, qn) || !ptrIs(g.Lag, qn) || g.CollectedAt != nil {
		t.Fatalf("live status of a store without a replica: %+v, want stream head and lag %d", g, qn)
	}
	// The table: HEAD, STREAM HEAD and LAG of the store's row.
	text := p.ok("", "fleet", "status", "--nats", srv.URL(), "--from", dir)
	if !strings.Contains(text, "STREAM HEAD") || !containsFields(text, id, itoa(int(n1)), itoa(int(n2)), itoa(int(n2-n1))) {
		t.Fatalf("live status table:\n%s", text)
	}

	// Status consumed nothing: the next collect gets the new events, and
	// the lag is gone, live and as last known.
	out := p.ok("", "--json", "fleet", "collect", "--nats", srv.URL(), "--into", dir)
	if !strings.Contains(out, `"appended":`+itoa(int(n2-n1))) {
		t.Fatalf("collect after status --nats: %s", out)
	}
	sameLedger(t, root, filepath.Join(dir, id))
	for _, args := range [][]string{{"--from", dir}, {"--from", dir, "--nats", srv.URL()}} {
		if r := fleetStatusRows(t, p, args...)[id]; r.ReplicaHead != n2 || !ptrIs(r.StreamHead, n2) || !ptrIs(r.Lag, 0) {
			t.Errorf("status %v after the collect: %+v, want heads %d, lag 0", args, r, n2)
		}
	}

	// No such stream: nothing to read, exit 2 naming it.
	if r := p.run("", "fleet", "status", "--nats", srv.URL(), "--from", dir, "--stream", "NOPE"); r.code != 2 || !strings.Contains(r.stderr, "stream NOPE does not exist") || r.stdout != "" {
		t.Fatalf("status of a missing stream: %+v", r)
	}
}

// containsFields reports whether a line of text has want as consecutive
// whitespace-separated fields, the first one at its start.
func containsFields(text string, first string, want ...string) bool {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != first {
			continue
		}
		for i := 1; i+len(want) <= len(f); i++ {
			if slices.Equal(f[i:i+len(want)], want) {
				return true
			}
		}
	}
	return false
}
