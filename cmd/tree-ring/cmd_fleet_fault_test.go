package main

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters/fleet"
	"github.com/tree-ring/tree-ring/adapters/fleet/fleettest"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/fleetcli"
	"github.com/tree-ring/tree-ring/cmd/internal/fleetstatus"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/projections"
)

// The fault tests run publish and collect against embedded servers and
// end, whatever happened, with every event of the project exactly once in
// the stream and in its replica, and `fleet verify` passing.

// bulkStore is an initialized project with n more events (run.started, one
// run each), appended in large transactions so a test has many batches.
type bulkStore struct {
	p    *hp
	root string
	id   string
	n    int // events in the ledger
}

func newBulkStore(t *testing.T, k, n int) *bulkStore {
	t.Helper()
	p := fleetProject(t, k)
	root := filepath.Join(p.dir, ".tree-ring")
	head := appendRuns(t, root, k, n)
	return &bulkStore{p: p, root: root, id: storeIDOf(t, root), n: int(head)}
}

// appendRuns appends n run.started events (one run each, ids marked k) to
// the ledger under root, 5,000 per transaction, and returns its head.
func appendRuns(tb testing.TB, root string, k, n int) uint64 {
	tb.Helper()
	st, err := bolt.OpenRoot(root, bolt.Options{Projections: projections.All()})
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	f := &events.Factory{Now: eventstest.Clock(eventstest.Epoch, time.Millisecond), NewID: eventstest.IDs(uint32(k)), Actor: "cli"}
	started := events.FormatRunTime(eventstest.Epoch)
	for done := 0; done < n; {
		err := st.Update(context.Background(), func(tx *bolt.Tx) error {
			for i := 0; i < 5000 && done < n; i++ {
				id := f.NewID()
				e, err := f.New(events.RunStream(id.String()), events.TypeRunStarted, &events.RunStarted{
					RunID: id.String(), ScopeKey: "0123456789abcdef01234567", Command: events.RunCmdEventsImport,
					Stage: "append", PID: done + 1, StartedAt: started,
				})
				if err != nil {
					return err
				}
				e.ID = id
				if _, err := tx.Append(e.Stream, 0, e); err != nil {
					return err
				}
				done++
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	head, _, err := st.Head()
	if err != nil {
		tb.Fatal(err)
	}
	return head
}

func (b *bulkStore) source() *fleetcli.LedgerSource {
	return ledgerSource(b.root)
}

// hookSource runs fn once, when Publish makes its at-th read.
type hookSource struct {
	fleet.Source
	reads, at int
	fn        func()
}

func (h *hookSource) Read(ctx context.Context, after uint64, max int) ([][]byte, error) {
	h.reads++
	if h.reads == h.at {
		h.fn()
	}
	return h.Source.Read(ctx, after, max)
}

func publishTo(t *testing.T, url string, src fleet.Source, id string, replicas int) (fleet.PublishResult, error) {
	t.Helper()
	nc, err := fleet.Connect(fleet.ConnOptions{URL: url, Timeout: 10 * time.Second})
	if err != nil {
		return fleet.PublishResult{}, err
	}
	defer nc.Close()
	return fleet.Publish(context.Background(), nc, src, fleet.PublishOptions{StoreID: id, Replicas: replicas, Timeout: 10 * time.Second})
}

// publishUntilDone reruns a publish that failed (as cron would), at most
// three times.
func publishUntilDone(t *testing.T, url string, b *bulkStore, src fleet.Source, replicas int) {
	t.Helper()
	var err error
	for range 3 {
		if _, err = publishTo(t, url, src, b.id, replicas); err == nil {
			return
		}
		t.Logf("publish failed, rerunning: %v", err)
		src = b.source()
	}
	t.Fatalf("publish: %v", err)
}

// wantStream fails unless the stream holds each of the store's events
// exactly once.
func wantStream(t *testing.T, url string, b *bulkStore) {
	t.Helper()
	n, err := fleettest.SubjectCount(url, fleet.DefaultStream, fleet.Subject(b.id))
	if err != nil {
		t.Fatal(err)
	}
	if n != uint64(b.n) {
		t.Fatalf("the stream holds %d messages for the store, the ledger %d events", n, b.n)
	}
}

func collectInto(t *testing.T, url, dir string, sink fleet.Sink) (fleet.CollectResult, error) {
	t.Helper()
	nc, err := fleet.Connect(fleet.ConnOptions{URL: url, Timeout: 10 * time.Second})
	if err != nil {
		return fleet.CollectResult{}, err
	}
	defer nc.Close()
	if sink == nil {
		sink = replicaDir(dir)
	}
	return fleet.Collect(context.Background(), nc, sink, fleet.CollectOptions{AckWait: time.Second, Timeout: 10 * time.Second})
}

// wantReplicas collects (again) and fails unless every store's replica is
// its ledger, byte for byte, and fleet verify passes.
func wantReplicas(t *testing.T, url, dir string, stores ...*bulkStore) {
	t.Helper()
	if _, err := collectInto(t, url, dir, nil); err != nil {
		t.Fatalf("collect: %v", err)
	}
	for _, b := range stores {
		sameLedger(t, b.root, filepath.Join(dir, b.id))
	}
	if r := runCLI(t, "", "fleet", "verify", "--from", dir); r.code != 0 {
		t.Fatalf("fleet verify: %+v", r)
	}
}

func TestFleetFaultPublisherKilledMidBatch(t *testing.T) {
	srv := startNATS(t)
	b := newBulkStore(t, 1, 12_000)
	bin := fleetBinary(t)
	cmd := exec.Command(bin, "--root", b.root, "fleet", "publish", "--nats", srv.URL())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var held uint64
	for deadline := time.Now().Add(20 * time.Second); held == 0 && time.Now().Before(deadline); {
		held, _ = fleettest.SubjectCount(srv.URL(), fleet.DefaultStream, fleet.Subject(b.id))
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	// A batch whose commit reached the server is stored whole even though
	// its publisher is gone: count once the server has closed the killed
	// publisher's connection (it has read all the publisher sent).
	waitUntil(t, 20*time.Second, "the server closes the killed publisher's connection", func() bool { return srv.NumClients() == 0 })
	// A committed batch is applied to the stream message by message (seen
	// mid-way under the race detector): wait, within the deadline, for the
	// count to be whole batches; a torn batch never becomes whole.
	whole := func(n uint64) bool { return n > 0 && (n%1000 == 0 || n == uint64(b.n)) }
	var err error
	waitUntil(t, 20*time.Second, "the stream holds whole batches", func() bool {
		held, err = fleettest.SubjectCount(srv.URL(), fleet.DefaultStream, fleet.Subject(b.id))
		return err == nil && whole(held)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed with %d of %d events in the stream", held, b.n)
	res, err := publishTo(t, srv.URL(), b.source(), b.id, 1)
	// The killed publisher can have one batch in flight that the server
	// commits after it was counted (the stream stores a committed batch
	// after the connection is gone; seen under load): the rerun
	// then loses its first batch's expected-sequence check, asks again
	// and resumes after it (one retry, 1,000 fewer to send).
	want := uint64(b.n) - held
	if err != nil || res.Held != held || !(res.Published == want || res.Retries >= 1 && res.Published == want-1000) {
		t.Fatalf("rerun: %+v %v", res, err)
	}
	wantStream(t, srv.URL(), b)
	wantReplicas(t, srv.URL(), t.TempDir(), b)
}

func TestFleetFaultSameEventsTwice(t *testing.T) {
	srv := startNATS(t)
	b := newBulkStore(t, 2, 5_000)
	// Two publishers of the same store at once, then a third after them:
	// every event lands once (the batches expect the subject's last
	// sequence; a loser asks the stream again and resumes after it).
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = publishTo(t, srv.URL(), b.source(), b.id, 1)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	res, err := publishTo(t, srv.URL(), b.source(), b.id, 1)
	if err != nil || res.Published != 0 || res.Held != uint64(b.n) {
		t.Fatalf("third publish: %+v %v", res, err)
	}
	wantStream(t, srv.URL(), b)
	dir := t.TempDir()
	wantReplicas(t, srv.URL(), dir, b)
	// Collecting again from the start (a new durable) into the same
	// directory finds only duplicates.
	nc, err := fleet.Connect(fleet.ConnOptions{URL: srv.URL(), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cr, err := fleet.Collect(context.Background(), nc, replicaDir(dir),
		fleet.CollectOptions{Durable: "again", AckWait: time.Second, Timeout: 10 * time.Second})
	// (More duplicates than events when the 1s ack wait expired on
	// prefetched messages of a slow run: redeliveries, also duplicates.)
	if err != nil || len(cr.Stores) != 1 || cr.Stores[0].Appended != 0 || cr.Stores[0].Duplicates < b.n {
		t.Fatalf("second collection: %+v %v", cr, err)
	}
	sameLedger(t, b.root, filepath.Join(dir, b.id))
}

func TestFleetFaultServerRestartDuringPublish(t *testing.T) {
	dir := t.TempDir()
	srv, err := fleettest.Start(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	cur := srv
	var mu sync.Mutex
	t.Cleanup(func() { mu.Lock(); cur.Shutdown(); mu.Unlock() })
	b := newBulkStore(t, 3, 8_000)
	restarted := make(chan error, 1)
	src := &hookSource{Source: b.source(), at: 4, fn: func() {
		// The 4th read is before batch 4 is sent: shut down once the server
		// has received its first message, while the batch is on the wire.
		sent := clientMsgs(cur)
		go func() {
			waitUntil(t, 20*time.Second, "batch 4 reaches the server", func() bool { return clientMsgs(cur) > sent })
			mu.Lock()
			defer mu.Unlock()
			cur.Shutdown()
			cur.WaitForShutdown()
			s, err := cur.Restart()
			if err == nil {
				cur = s
			}
			restarted <- err
		}()
	}}
	publishUntilDone(t, srv.URL(), b, src, 1)
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	wantStream(t, srv.URL(), b)
	wantReplicas(t, srv.URL(), t.TempDir(), b)
}

// killSink is a collector dying in the middle of its work: on its at-th
// batch it closes the connection, after committing (so no acknowledgement
// is sent) or before.
type killSink struct {
	*fleetcli.ReplicaDir
	at, calls   int
	afterCommit bool
	kill        func()
	head        uint64 // the replica's head when it was killed
}

func (k *killSink) Replicate(ctx context.Context, store string, raws [][]byte) (fleet.Applied, error) {
	k.calls++
	if k.calls != k.at {
		a, err := k.ReplicaDir.Replicate(ctx, store, raws)
		k.head = a.Head
		return a, err
	}
	if !k.afterCommit {
		k.kill()
		return fleet.Applied{}, errors.New("killed before commit")
	}
	a, err := k.ReplicaDir.Replicate(ctx, store, raws)
	k.head = a.Head
	k.kill()
	return a, err
}

func TestFleetFaultCollectorKilled(t *testing.T) {
	for _, afterCommit := range []bool{true, false} {
		name := map[bool]string{true: "between commit and ack", false: "before commit"}[afterCommit]
		t.Run(name, func(t *testing.T) {
			srv := startNATS(t)
			b := newBulkStore(t, 4, 5_000)
			if _, err := publishTo(t, srv.URL(), b.source(), b.id, 1); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			nc, err := fleet.Connect(fleet.ConnOptions{URL: srv.URL(), Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			sink := &killSink{ReplicaDir: replicaDir(dir), at: 3, afterCommit: afterCommit, kill: nc.Close}
			_, err = fleet.Collect(context.Background(), nc, sink, fleet.CollectOptions{AckWait: time.Second, Timeout: 10 * time.Second, Batch: 500})
			if err == nil {
				t.Fatal("the killed collector returned no error")
			}
			head := uint64(len(ledgerBytes(t, filepath.Join(dir, b.id))))
			if head != sink.head || head == 0 || head >= uint64(b.n) {
				t.Fatalf("the killed collector left %d events in the replica, its last commit was at %d of %d", head, sink.head, b.n)
			}
			wantReplicas(t, srv.URL(), dir, b)
		})
	}
}

func TestFleetFaultClusterLeaderLost(t *testing.T) {
	nodes, err := fleettest.Cluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.Shutdown()
		}
	})
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.URL())
	}
	all := strings.Join(urls, ",")
	b := newBulkStore(t, 5, 8_000)
	lost := make(chan *fleettest.Server, 1)
	src := &hookSource{Source: b.source(), at: 4, fn: func() {
		// As in TestFleetFaultServerRestartDuringPublish: stop the leader
		// once batch 4's first message reached a node.
		sent := clientMsgs(nodes...)
		go func() {
			waitUntil(t, 20*time.Second, "batch 4 reaches a node", func() bool { return clientMsgs(nodes...) > sent })
			l := fleettest.StreamLeader(nodes, fleet.DefaultStream)
			if l != nil {
				l.Shutdown()
			}
			lost <- l
		}()
	}}
	// One run: publish waits out the election within its --timeout.
	if _, err := publishTo(t, all, src, b.id, 3); err != nil {
		t.Fatalf("publish through the leader's loss: %v", err)
	}
	l := <-lost
	if l == nil {
		t.Fatal("no stream leader to stop")
	}
	var alive string
	for _, n := range nodes {
		if n != l {
			alive = n.URL()
		}
	}
	wantStream(t, alive, b)
	wantReplicas(t, all, t.TempDir(), b)
}

func TestFleetFaultGapStopsOnlyThatStore(t *testing.T) {
	srv := startNATS(t)
	a, b := newBulkStore(t, 6, 2_500), newBulkStore(t, 7, 2_500)
	for _, s := range []*bulkStore{a, b} {
		if _, err := publishTo(t, srv.URL(), s.source(), s.id, 1); err != nil {
			t.Fatal(err)
		}
	}
	// Someone deletes one of a's messages from the stream.
	if _, err := fleettest.EditMessage(srv.URL(), fleet.DefaultStream, fleet.Subject(a.id), 1500, func([]byte) []byte { return nil }); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res, err := collectInto(t, srv.URL(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got fleet.StoreCount
	for _, s := range res.Stores {
		if s.StoreID == a.id {
			got = s
		}
	}
	if got.StoppedAt != 1500 || got.Appended != 1499 || !strings.Contains(got.Reason, "gap: position 1500 is not in the stream (the next it holds is 1501)") {
		t.Fatalf("store with a gap: %+v", got)
	}
	sameLedger(t, b.root, filepath.Join(dir, b.id))
	r := runCLI(t, "", "fleet", "verify", "--from", dir)
	if r.code != 3 || !strings.Contains(r.stderr, "store "+a.id+": position 1500: replica stopped by fleet collect: gap") {
		t.Fatalf("verify: %+v", r)
	}
	// Status shows, per store, how far its replica was behind the stream
	// when the collect had nothing left to deliver.
	st := runCLI(t, "", "--json", "fleet", "status", "--from", dir)
	var status struct {
		Rows []fleetstatus.Row `json:"rows"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &status); err != nil || len(status.Rows) == 0 {
		t.Fatalf("fleet status: %v %+v", err, st)
	}
	for _, r := range status.Rows {
		want := map[string][2]uint64{a.id: {1499, uint64(a.n) - 1499}, b.id: {uint64(b.n), 0}}[r.StoreID]
		if r.ReplicaHead != want[0] || r.StreamHead == nil || *r.StreamHead != uint64(map[string]int{a.id: a.n, b.id: b.n}[r.StoreID]) ||
			r.Lag == nil || *r.Lag != want[1] || r.CollectedAt == nil {
			t.Errorf("status of %s: %+v, want replica head %d, lag %d", r.StoreID, r, want[0], want[1])
		}
	}
	// A rerun does not touch the stopped replica.
	before := ledgerBytes(t, filepath.Join(dir, a.id))
	if _, err := collectInto(t, srv.URL(), dir, nil); err != nil {
		t.Fatal(err)
	}
	if after := ledgerBytes(t, filepath.Join(dir, a.id)); len(after) != len(before) {
		t.Fatalf("a stopped replica grew from %d to %d events", len(before), len(after))
	}
}

// clientMsgs is the number of messages the open client connections of
// servers have published (routes between nodes not counted).
func clientMsgs(servers ...*fleettest.Server) int64 {
	var n int64
	for _, s := range servers {
		c, err := s.Connz(nil)
		if err != nil {
			continue
		}
		for _, ci := range c.Conns {
			n += ci.InMsgs
		}
	}
	return n
}

// waitUntil polls cond until it holds, failing the test (what names the
// condition) at the deadline.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("timed out after %v waiting until %s", timeout, what)
			return
		}
	}
}
