package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters/fleet"
	"github.com/tree-ring/tree-ring/adapters/fleet/fleettest"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/projections"
)

// BenchmarkFleet measures, in one run against one embedded server on
// loopback, fleet publish and fleet collect of a ledger of
// TREE_RING_FLEET_BENCH_EVENTS events (default 1,000,000) beside the raw
// baselines: plain nats.go async publish and pull-consume of the same
// bytes, and the replica's own append speed (bolt Replicate of the same
// bytes, no network). Run with -benchtime 1x (docs/benchmarks.md).
func BenchmarkFleet(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("TREE_RING_FLEET_BENCH_EVENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	for range b.N {
		benchFleetOnce(b, n)
	}
}

func benchFleetOnce(b *testing.B, n int) {
	b.StopTimer()
	base := b.TempDir()
	srv, err := fleettest.Start(filepath.Join(base, "nats"), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	proj := filepath.Join(base, "project")
	root := filepath.Join(proj, ".tree-ring")
	if err := os.MkdirAll(filepath.Join(proj, ".claude"), 0o755); err != nil {
		b.Fatal(err)
	}
	if r := (invocation{deps: testDeps(), stdout: io.Discard}).run("--root", root, "--source-root", proj, "init"); r.code != 0 {
		b.Fatalf("init: %s", r.stderr)
	}
	// The store's signing key, as init will make it.
	if r := (invocation{deps: testDeps(), stdout: io.Discard}).run("--root", root, "--source-root", proj, "fleet", "identity"); r.code != 0 {
		b.Fatalf("fleet identity: %s", r.stderr)
	}
	head := appendRuns(b, root, 9, n-int(countEvents(b, root)))
	var id string
	st, err := ledgerSource(root).Open()
	if err != nil {
		b.Fatal(err)
	}
	if err := st.View(func(r *bolt.Reader) error { ms, _, err := cli.StoreIdentity(r); id = ms.StoreID; return err }); err != nil {
		b.Fatal(err)
	}
	st.Close()
	rate := func(name string, start time.Time) {
		b.ReportMetric(float64(head)/time.Since(start).Seconds(), name+"-events/s")
	}
	b.StartTimer()

	nc, err := fleet.Connect(fleet.ConnOptions{URL: srv.URL(), Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	start := time.Now()
	if _, err := fleet.Publish(context.Background(), nc, ledgerSource(root), fleet.PublishOptions{StoreID: id, Timeout: time.Minute}); err != nil {
		b.Fatal(err)
	}
	rate("publish", start)

	src := ledgerSource(root)
	var at uint64
	start = time.Now()
	sent, err := fleettest.RawPublish(srv.URL(), func() [][]byte {
		raws, err := src.Read(context.Background(), at, 1000)
		if err != nil {
			b.Fatal(err)
		}
		if len(raws) == 0 {
			return nil
		}
		at += uint64(len(raws))
		return raws
	})
	if err != nil || uint64(sent) != head {
		b.Fatalf("raw publish: %d %v", sent, err)
	}
	rate("raw-publish", start)

	dir := filepath.Join(base, "replicas")
	if err := os.Mkdir(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	res, err := fleet.Collect(context.Background(), nc, replicaDir(dir), fleet.CollectOptions{Timeout: time.Minute})
	if err != nil || len(res.Stores) != 1 || uint64(res.Stores[0].Appended) != head {
		b.Fatalf("collect: %+v %v", res, err)
	}
	rate("collect", start)

	start = time.Now()
	if _, err := fleettest.RawConsume(srv.URL(), int(head)); err != nil {
		b.Fatal(err)
	}
	rate("raw-consume", start)

	// The replica's floor: the same bytes through bolt Replicate, in the
	// collector's batches of 5,000, with every projection.
	floor, err := bolt.OpenRoot(filepath.Join(base, "floor"), bolt.Options{Projections: projections.All()})
	if err != nil {
		b.Fatal(err)
	}
	defer floor.Close()
	src, at = ledgerSource(root), 0
	start = time.Now()
	for at < head {
		raws, err := src.Read(context.Background(), at, 5000)
		if err != nil {
			b.Fatal(err)
		}
		if r, err := floor.Replicate(context.Background(), raws); err != nil || r.Appended != len(raws) {
			b.Fatalf("replicate: %+v %v", r, err)
		}
		at += uint64(len(raws))
	}
	rate("replicate", start)
	b.StopTimer()
}

func countEvents(tb testing.TB, root string) uint64 {
	st, err := bolt.OpenRoot(root, bolt.Options{ReadOnly: true, Projections: projections.All()})
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	pos, _, err := st.Head()
	if err != nil {
		tb.Fatal(err)
	}
	return pos
}
