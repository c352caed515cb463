package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters/fleet/fleettest"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/fleetstatus"
	"github.com/tree-ring/tree-ring/cmd/internal/replica"
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
	p.n = uint64(k) * 1_000_000 // 8 digits (hp formats ids with %08d) for k < 100
	p.init()
	if r := p.hook("claude-code", p.payload("claude-code", "session-start.json", nil)); r.code != 0 {
		t.Fatalf("hook: %s", r.stderr)
	}
	// The store's signing key, as init will make it.
	p.ok("", "fleet", "identity")
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
		ms, _, err := cli.StoreIdentity(r)
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
	if _, err := os.Stat(filepath.Join(dir, id, replica.StopFile)); err == nil {
		t.Fatal("replica stopped")
	}
}

// editYear changes one byte of an envelope: the year of recorded_at (still
// a valid envelope, no longer hashing to its hash).
func editYear(b []byte) []byte {
	i := bytes.Index(b, []byte(`"recorded_at":"2026`))
	b[i+len(`"recorded_at":"2026`)-1] = '7'
	return b
}

func TestFleetThreeProjects(t *testing.T) {
	srv := startNATS(t)
	var roots, ids []string
	var ps []*hp
	for k := 1; k <= 3; k++ {
		p := fleetProject(t, k)
		root := filepath.Join(p.dir, ".tree-ring")
		p.ok("", "fleet", "publish", "--nats", srv.URL())
		ps, roots, ids = append(ps, p), append(roots, root), append(ids, storeIDOf(t, root))
	}
	dir := t.TempDir()
	ps[0].ok("", "fleet", "collect", "--nats", srv.URL(), "--into", dir)
	for i := range roots {
		sameLedger(t, roots[i], filepath.Join(dir, ids[i]))
	}

	var st struct {
		OK   bool              `json:"ok"`
		Rows []fleetstatus.Row `json:"rows"`
	}
	if err := json.Unmarshal([]byte(ps[0].ok("", "--json", "fleet", "status", "--from", dir)), &st); err != nil || !st.OK {
		t.Fatalf("status: %v", err)
	}
	active := map[string]bool{}
	for _, r := range st.Rows {
		if r.HarnessID == "claude-code" && r.State == "active" && r.NewestReceiptAt != nil && r.LastEventAt != nil && r.Replica == "ok" && r.ProjectRootFingerprint != "" {
			active[r.StoreID] = true
		}
	}
	for _, id := range ids {
		if !active[id] {
			t.Errorf("status has no active claude-code row with a receipt for store %s: %+v", id, st.Rows)
		}
	}
	// Long before the first event: nothing is proven, nothing happened yet.
	text := ps[0].ok("", "fleet", "status", "--from", dir, "--at", "2020-01-01T00:00:00Z")
	if strings.Contains(text, "active") || strings.Count(text, "\n") != 7 || strings.Count(text, " unsupported ") != 6 {
		t.Errorf("status at 2020:\n%s", text)
	}
	out := ps[0].ok("", "fleet", "verify", "--from", dir)
	if !strings.HasSuffix(out, "fleet verified: 3 replicas, "+itoa(len(ledgerBytes(t, roots[0]))+len(ledgerBytes(t, roots[1]))+len(ledgerBytes(t, roots[2])))+" events\n") {
		t.Fatalf("verify: %s", out)
	}
	// Every read command works on a replica.
	if r := ps[0].raw("", "--root", filepath.Join(dir, ids[1]), "audit", "replay", "--harness", "claude-code"); r.code != 0 || !strings.Contains(r.stdout, "claude-code: active") {
		t.Fatalf("audit replay on a replica: %+v", r)
	}

	// One byte of one stored message edited in the stream: a new
	// collection stops that store at that position, verify exits 3 naming it.
	if _, err := fleettest.EditMessage(srv.URL(), "TREE_RING", "tree-ring.events."+ids[1], 3, editYear); err != nil {
		t.Fatal(err)
	}
	dir2 := t.TempDir()
	r := ps[0].run("", "fleet", "collect", "--nats", srv.URL(), "--into", dir2, "--durable", "second")
	if r.code != 0 || !strings.Contains(r.stderr, "store "+ids[1]+": replica stopped at position 3") {
		t.Fatalf("collect after the edit: %+v", r)
	}
	for _, i := range []int{0, 2} {
		sameLedger(t, roots[i], filepath.Join(dir2, ids[i]))
	}
	if got := ledgerBytes(t, filepath.Join(dir2, ids[1])); len(got) != 2 {
		t.Errorf("the stopped replica holds %d events, want the 2 before the edit", len(got))
	}
	r = ps[0].run("", "fleet", "verify", "--from", dir2)
	// Every store is checked: the two good ones verified, the bad one named.
	if r.code != 3 || !strings.Contains(r.stderr, "store "+ids[1]+": position 3: replica stopped by fleet collect") ||
		strings.Count(r.stdout, "verified store ") != 2 || !strings.Contains(r.stdout, "FAILED store "+ids[1]+": position 3") {
		t.Fatalf("verify after the edit: %+v", r)
	}
	// The publisher notices too: the stream's last event for the store is
	// no longer the ledger's.
	r = ps[1].run("", "fleet", "publish", "--nats", srv.URL())
	if r.code != 2 || !strings.Contains(r.stderr, "differs from this ledger's event") {
		t.Fatalf("publish after the edit: %+v", r)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// filesContaining lists the files under dir whose bytes contain canary.
func filesContaining(t *testing.T, dir, canary string) (hits []string, searched int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		searched += len(b)
		if bytes.Contains(b, []byte(canary)) {
			hits = append(hits, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits, searched
}

// Memory text and hook input stay on the host: after publishing and
// collecting, no byte the server stored and no byte of the replicas holds
// the canaries, while the project's own ledger holds the memory text.
func TestFleetPrivacyCanary(t *testing.T) {
	natsDir := t.TempDir()
	srv, err := fleettest.Start(natsDir, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	const memory, transcript = "CANARY-memory-7f3a9e", "CANARY-transcript-c41d"
	p := newHP(t, ".claude")
	p.init()
	p.ok("", "remember", "Deploys go through "+memory, "--event-type", "decision", "--project", "demo")
	if r := p.hook("claude-code", p.payload("claude-code", "session-start.json", func(m map[string]any) {
		m["transcript_path"] = "/home/dev/.claude/projects/" + transcript + ".jsonl"
	})); r.code != 0 {
		t.Fatalf("hook: %s", r.stderr)
	}
	if hits, _ := filesContaining(t, filepath.Join(p.dir, ".tree-ring"), memory); len(hits) == 0 {
		t.Fatal("the canary memory is not in the project's ledger: the test planted nothing")
	}
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	dir := t.TempDir()
	p.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", dir)
	srv.Shutdown() // flush everything the server keeps to its files
	srv.WaitForShutdown()
	// The events are there in plain bytes (so the search can see them).
	if hits, _ := filesContaining(t, natsDir, `"type":"memory.captured"`); len(hits) == 0 {
		t.Fatal("the server's files hold no readable event: the search would prove nothing")
	}
	for _, where := range []string{natsDir, dir} {
		for _, c := range []string{memory, transcript} {
			hits, searched := filesContaining(t, where, c)
			if len(hits) > 0 {
				t.Errorf("%s found in %v", c, hits)
			}
			if searched == 0 {
				t.Errorf("nothing searched under %s", where)
			}
		}
	}
}

func TestFleetUserPassword(t *testing.T) {
	const pw = "pa55-CANARY-word"
	srv, err := fleettest.StartAuth(t.TempDir(), fleettest.Auth{User: "host", Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	p := fleetProject(t, 8)
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	if err := os.WriteFile(good, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("wrong-CANARY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := srv.URL()
	if r := p.run("", "fleet", "publish", "--nats", url, "--timeout", "2s"); r.code != 2 || !strings.Contains(r.stderr, "connect to NATS") {
		t.Fatalf("without credentials: %+v", r)
	}
	r := p.run("", "fleet", "publish", "--nats", url, "--user", "host", "--password-file", bad, "--timeout", "2s")
	if r.code != 2 || !strings.Contains(r.stderr, "connect to NATS") || strings.Contains(r.stderr, "CANARY") {
		t.Fatalf("wrong password: %+v", r)
	}
	if r := p.run("", "fleet", "publish", "--nats", url, "--user", "host"); r.code != 2 || !strings.Contains(r.stderr, "--user and --password-file go together") {
		t.Fatalf("user without a password file: %+v", r)
	}
	out := p.ok("", "fleet", "publish", "--nats", url, "--user", "host", "--password-file", good)
	if !strings.HasPrefix(out, "published ") || strings.Contains(out, "CANARY") {
		t.Fatalf("publish: %s", out)
	}
	replicas := t.TempDir()
	p.ok("", "fleet", "collect", "--nats", url, "--user", "host", "--password-file", good, "--into", replicas)
	root := filepath.Join(p.dir, ".tree-ring")
	id := storeIDOf(t, root)
	sameLedger(t, root, filepath.Join(replicas, id))
	// status --nats takes the same connection flags.
	n := uint64(len(ledgerBytes(t, root)))
	if r := fleetStatusRows(t, p, "--from", replicas, "--nats", url, "--user", "host", "--password-file", good)[id]; !ptrIs(r.StreamHead, n) || !ptrIs(r.Lag, 0) {
		t.Fatalf("status --nats with a password: %+v, want stream head %d, lag 0", r, n)
	}
	r = p.run("", "fleet", "status", "--from", replicas, "--nats", url, "--user", "host", "--password-file", bad, "--timeout", "2s")
	if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "connect to NATS") || strings.Contains(r.stderr, "CANARY") {
		t.Fatalf("status --nats with a wrong password: %+v", r)
	}
}

func TestFleetCollectFollow(t *testing.T) {
	srv := startNATS(t)
	p := fleetProject(t, 9)
	root := filepath.Join(p.dir, ".tree-ring")
	id := storeIDOf(t, root)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result, 1)
	go func() {
		done <- invocation{ctx: ctx, deps: testDeps()}.run("fleet", "collect", "--nats", srv.URL(), "--into", dir, "--follow")
	}()
	// waitFor polls the replica (it is open only during each commit) until
	// it holds the project's events.
	waitFor := func() {
		t.Helper()
		want := len(ledgerBytes(t, root))
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(dir, id, bolt.LedgerFile)); err != nil {
				continue
			}
			st, err := bolt.OpenRoot(filepath.Join(dir, id), bolt.Options{ReadOnly: true, LockTimeout: time.Second, Projections: projections.All()})
			if err != nil {
				continue
			}
			head, _, _ := st.Head()
			st.Close()
			if head == uint64(want) {
				return
			}
		}
		t.Fatalf("the following collector did not reach %d events", want)
	}
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	waitFor()
	// New events on the host, published later, reach the replica too.
	if r := p.hook("claude-code", p.payload("claude-code", "session-start.json", func(m map[string]any) { m["session_id"] = "second" })); r.code != 0 {
		t.Fatalf("hook: %s", r.stderr)
	}
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	waitFor()
	cancel()
	r := <-done
	if r.code != 0 || !strings.Contains(r.stdout, id) {
		t.Fatalf("interrupted follow: %+v", r)
	}
	sameLedger(t, root, filepath.Join(dir, id))
}
