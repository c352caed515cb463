package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters/fleet"
	"github.com/tree-ring/tree-ring/adapters/fleet/fleettest"
)

// The failover tests kill a leader of a 3-node cluster (the stream's, the
// consumer's) and want publish and collect to finish in the same run.

func startCluster(t *testing.T) ([]*fleettest.Server, string) {
	t.Helper()
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
	return nodes, strings.Join(urls, ",")
}

// consumerLeader is the node that leads the collector's durable, or nil.
func consumerLeader(nodes []*fleettest.Server) *fleettest.Server {
	for _, n := range nodes {
		if n.Running() && n.JetStreamIsConsumerLeader(n.GlobalAccount().Name, fleet.DefaultStream, fleet.DefaultDurable) {
			return n
		}
	}
	return nil
}

// A publish that starts while the stream has no leader waits out the
// election and publishes everything in that run.
func TestFleetFailoverPublishDuringElection(t *testing.T) {
	nodes, all := startCluster(t)
	b := newBulkStore(t, 5, 2_000)
	if _, err := publishTo(t, all, b.source(), b.id, 3); err != nil {
		t.Fatal(err)
	}
	held := uint64(b.n)
	b.n = int(appendRuns(t, b.root, 15, 2_000))
	l := fleettest.StreamLeader(nodes, fleet.DefaultStream)
	if l == nil {
		t.Fatal("no stream leader")
	}
	l.Shutdown()
	res, err := publishTo(t, all, b.source(), b.id, 3)
	if err != nil {
		t.Fatalf("publish during the election: %v", err)
	}
	if res.Held != held || res.Published != uint64(b.n)-held || res.Head != uint64(b.n) {
		t.Fatalf("publish: %+v", res)
	}
	wantReplicas(t, all, t.TempDir(), b)
}

// headSink reports the replica's head after each commit.
type headSink struct {
	fleet.Sink
	head chan uint64
}

func (h *headSink) Replicate(ctx context.Context, store string, raws [][]byte) (fleet.Applied, error) {
	a, err := h.Sink.Replicate(ctx, store, raws)
	if err == nil {
		select {
		case <-h.head:
		default:
		}
		h.head <- a.Head
	}
	return a, err
}

// A collect --follow, idle for longer than its --timeout, loses the
// consumer's leader, which is also the server it is connected to: it goes
// on, and collects what is published after.
func TestFleetFailoverFollowLosesConsumerLeader(t *testing.T) {
	nodes, all := startCluster(t)
	b := newBulkStore(t, 5, 3_000)
	if _, err := publishTo(t, all, b.source(), b.id, 3); err != nil {
		t.Fatal(err)
	}
	// Create the consumer, then connect the collector to its leader.
	dir := t.TempDir()
	if _, err := collectInto(t, all, dir, nil); err != nil {
		t.Fatal(err)
	}
	const timeout = 5 * time.Second
	leader := consumerLeader(nodes)
	if leader == nil {
		t.Fatal("no consumer leader")
	}
	nc, err := fleet.Connect(fleet.ConnOptions{URL: leader.URL(), Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sink := &headSink{Sink: replicaDir(dir), head: make(chan uint64, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := fleet.Collect(ctx, nc, sink, fleet.CollectOptions{AckWait: time.Second, Timeout: timeout, Follow: true})
		done <- err
	}()
	// The scenario is a quiet daemon: nothing to collect for longer than
	// --timeout (this wait is the condition under test, not a sync).
	quiet := time.Now()
	waitUntil(t, 10*time.Second, "the collector is quiet for longer than --timeout", func() bool {
		select {
		case err := <-done:
			t.Fatalf("collect --follow ended while quiet: %v", err)
		default:
		}
		return time.Since(quiet) > timeout
	})
	leader.Shutdown()
	b.n = int(appendRuns(t, b.root, 15, 500))
	if _, err := publishTo(t, all, b.source(), b.id, 3); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	for caught := false; !caught; {
		select {
		case h := <-sink.head:
			caught = h == uint64(b.n)
		case err := <-done:
			t.Fatalf("collect --follow ended after its consumer's leader went: %v", err)
		case <-deadline:
			t.Fatalf("the replica did not reach %d within 30s of the leader's loss", b.n)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("collect --follow, cancelled: %v", err)
	}
	sameLedger(t, b.root, filepath.Join(dir, b.id))
}

// A collect that loses its consumer's leader mid-run finishes in that
// run with every event once.
func TestFleetFailoverCollectLosesConsumerLeader(t *testing.T) {
	nodes, all := startCluster(t)
	b := newBulkStore(t, 5, 20_000)
	if _, err := publishTo(t, all, b.source(), b.id, 3); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sink := &everySink{Sink: replicaDir(dir), at: 2, fn: func() {
		if l := consumerLeader(nodes); l != nil {
			l.Shutdown()
		}
	}}
	if _, err := collectInto(t, all, dir, sink); err != nil {
		t.Fatalf("collect through the consumer leader's loss: %v", err)
	}
	sameLedger(t, b.root, filepath.Join(dir, b.id))
}

// everySink runs fn once, at the at-th commit.
type everySink struct {
	fleet.Sink
	n, at int
	fn    func()
}

func (k *everySink) Replicate(ctx context.Context, store string, raws [][]byte) (fleet.Applied, error) {
	if k.n++; k.n == k.at {
		k.fn()
	}
	return k.Sink.Replicate(ctx, store, raws)
}
