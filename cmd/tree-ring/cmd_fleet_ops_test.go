package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tree-ring/tree-ring/adapters/fleet"
	"github.com/tree-ring/tree-ring/adapters/fleet/fleettest"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/fleetcli"
	"github.com/tree-ring/tree-ring/events"
)

// junkCopy publishes the ledger's event at pos again, as the host would
// (same bytes and signature), with msgID as its Nats-Msg-Id.
func junkCopy(t *testing.T, url string, b *bulkStore, pos uint64, msgID string) {
	t.Helper()
	src := b.source()
	raws, err := src.Read(context.Background(), pos-1, 1)
	if err != nil || len(raws) != 1 {
		t.Fatalf("read position %d: %v", pos, err)
	}
	ref, err := events.DecodeStoredRef(raws[0])
	if err != nil {
		t.Fatal(err)
	}
	if msgID == "" {
		msgID = ref.ID.String()
	}
	sig, key, err := src.Sign(pos, ref.Hash)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{jetstream.MsgIDHeader: msgID, fleet.HeaderPosition: strconv.FormatUint(pos, 10),
		fleet.HeaderHash: ref.Hash, fleet.HeaderKey: key, fleet.HeaderSignature: sig}
	if err := fleettest.PublishRaw(url, fleet.DefaultStream, fleet.Subject(b.id), raws[0], h); err != nil {
		t.Fatal(err)
	}
}

// Copies and reorderings in the stream, inside the duplicate window, do
// not stop the host's next publish; collect and verify still pass.
func TestFleetJunkDoesNotWedgePublish(t *testing.T) {
	srv := startNATS(t)
	b := newBulkStore(t, 8, 100)
	if _, err := publishTo(t, srv.URL(), b.source(), b.id, 1); err != nil {
		t.Fatal(err)
	}
	// A byte-identical copy of position 50 under a new message id.
	junkCopy(t, srv.URL(), b, 50, "junk-copy-of-50")
	b.n = int(appendRuns(t, b.root, 18, 20))
	res, err := publishTo(t, srv.URL(), b.source(), b.id, 1)
	if err != nil {
		t.Fatalf("publish after a copy: %v", err)
	}
	if res.Head != uint64(b.n) {
		t.Fatalf("publish after a copy: %+v", res)
	}
	// The host's genuine next two events, published by someone else in
	// reverse order.
	b.n = int(appendRuns(t, b.root, 19, 2))
	junkCopy(t, srv.URL(), b, uint64(b.n), "")
	junkCopy(t, srv.URL(), b, uint64(b.n-1), "")
	b.n = int(appendRuns(t, b.root, 20, 3))
	if res, err = publishTo(t, srv.URL(), b.source(), b.id, 1); err != nil {
		t.Fatalf("publish after a reordering: %v", err)
	}
	if res.Head != uint64(b.n) {
		t.Fatalf("publish after a reordering: %+v", res)
	}
	wantReplicas(t, srv.URL(), t.TempDir(), b)
}

// --log-level debug shows what publish and collect do, as JSON lines on
// stderr: positions, counts and sequences, never an event's body.
func TestFleetDebugLog(t *testing.T) {
	srv := startNATS(t)
	p := fleetProject(t, 21)
	root := filepath.Join(p.dir, ".tree-ring")
	head := len(ledgerBytes(t, root))
	r := p.run("", "--log-level", "debug", "fleet", "publish", "--nats", srv.URL())
	want := fmt.Sprintf(`"first":1,"last":%d,`, head)
	if r.code != 0 || !strings.Contains(r.stderr, `"message":"publish: batch committed"`) || !strings.Contains(r.stderr, want) ||
		!strings.Contains(r.stderr, `"message":"publish: the stream's head"`) {
		t.Fatalf("publish --log-level debug: want %s in %+v", want, r)
	}
	c := p.run("", "--log-level", "debug", "fleet", "collect", "--nats", srv.URL(), "--into", t.TempDir())
	want = fmt.Sprintf(`"store":%q,"appended":%d,"duplicates":0,"head":%d`, storeIDOf(t, root), head, head)
	if c.code != 0 || !strings.Contains(c.stderr, `"message":"collect: consumer bound"`) || !strings.Contains(c.stderr, want) {
		t.Fatalf("collect --log-level debug: want %s in %+v", want, c)
	}
	for _, out := range []string{r.stderr, c.stderr} {
		if strings.Contains(out, `"payload"`) || strings.Contains(out, "session") {
			t.Errorf("a debug line carries event content: %s", out)
		}
	}
}

// A replica refuses every write command with one line and changes by not
// an event; it still verifies.
func TestFleetReplicaIsReadOnly(t *testing.T) {
	srv := startNATS(t)
	p := fleetProject(t, 22)
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	dir := t.TempDir()
	p.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", dir)
	rep := filepath.Join(dir, storeIDOf(t, filepath.Join(p.dir, ".tree-ring")))
	before := ledgerBytes(t, rep)
	for _, args := range [][]string{
		{"remember", "Deploys go through the staging gate", "--event-type", "decision", "--project", "demo"},
		{"fleet", "identity"},
		{"projections", "rebuild"},
	} {
		r := p.run("", append([]string{"--root", rep, "--source-root", p.dir}, args...)...)
		if r.code == 0 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "this root is a fleet replica") {
			t.Errorf("%v on a replica: %+v", args, r)
		}
	}
	if r := p.run("", "--root", rep, "--source-root", p.dir, "fleet", "publish", "--nats", srv.URL()); r.code == 0 {
		t.Errorf("publish from a replica: %+v", r)
	}
	if after := ledgerBytes(t, rep); len(after) != len(before) {
		t.Fatalf("a write command appended %d events to the replica", len(after)-len(before))
	}
	if r := p.run("", "fleet", "verify", "--from", dir); r.code != 0 {
		t.Fatalf("fleet verify after the refused writes: %+v", r)
	}
}

// publish --watch publishes what is in the ledger, then each event that
// lands after it started, and stops cleanly (exit 0) when cancelled.
func TestFleetPublishWatch(t *testing.T) {
	srv := startNATS(t)
	b := newBulkStore(t, 23, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- fleetcli.Main(ctx, []string{"publish", "--watch", "--interval", "10ms", "--nats", srv.URL(), "--root", b.root, "--source-root", b.p.dir},
			cli.IO{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}, fleetcli.Deps{})
	}()
	streamHolds := func(n int) func() bool {
		return func() bool {
			got, err := fleettest.SubjectCount(srv.URL(), fleet.DefaultStream, fleet.Subject(b.id))
			return err == nil && got == uint64(n)
		}
	}
	waitUntil(t, 20*time.Second, "the stream holds the ledger", streamHolds(b.n))
	for _, k := range []int{24, 25} {
		b.n = int(appendRuns(t, b.root, k, 7))
		waitUntil(t, 20*time.Second, fmt.Sprintf("the stream holds the %d events after an append", b.n), streamHolds(b.n))
		waitUntil(t, 20*time.Second, "publish --watch says so", func() bool { return strings.Contains(stdout.String(), fmt.Sprintf("now %d)", b.n)) })
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("publish --watch, cancelled: exit %d, %s", code, stderr.String())
	}
	if got := strings.Count(stdout.String(), "published "); got != 3 || !strings.Contains(stdout.String(), fmt.Sprintf("now %d)", b.n)) {
		t.Fatalf("publish --watch printed:\n%s", stdout.String())
	}
	wantReplicas(t, srv.URL(), t.TempDir(), b)
}

// lockedBuffer is a bytes.Buffer a test reads while a command writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
