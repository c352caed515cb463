package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters/fleet"
	"github.com/tree-ring/tree-ring/adapters/fleet/fleetsign"
	"github.com/tree-ring/tree-ring/adapters/fleet/fleettest"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/projections"
)

// A recorded key rotation: the events before it verify under the old
// key, those after under the new; publish signs the events it has not
// sent yet with the old key until the stream holds the rotation, then
// drops the old key; a fleet file made before the rotation (the store's
// first key) still collects and verifies, through two rotations; no
// private key reaches the stream or the replicas. A forger's rotation,
// not signed by the previous key, stops the store at its position.
func TestFleetKeyRotation(t *testing.T) {
	natsDir := t.TempDir()
	srv, err := fleettest.Start(natsDir, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	p := fleetProject(t, 50)
	root := filepath.Join(p.dir, ".tree-ring")
	id := storeIDOf(t, root)
	line := strings.TrimSpace(p.ok("", "fleet", "identity", "--label", "runner-r"))
	dir := t.TempDir()
	fleetFile := filepath.Join(dir, "fleet.txt")
	if err := os.WriteFile(fleetFile, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	first, _, err := fleetsign.LoadKey(root)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing published yet: the rotation keeps the old key for the
	// events before it.
	out := p.ok("", "fleet", "rotate-key")
	if !strings.HasPrefix(out, "rotated the signing key of store "+id+" at position ") || !strings.Contains(out, fleetsign.PreviousKeyFile) {
		t.Fatalf("rotate-key: %s", out)
	}
	if _, err := os.Stat(filepath.Join(root, fleetsign.PreviousKeyFile)); err != nil {
		t.Fatalf("the old key is not kept: %v", err)
	}
	if r := p.run("", "fleet", "rotate-key"); r.code == 0 || !strings.Contains(r.stderr, "publish, then rotate again") {
		t.Fatalf("a second rotation before publishing: %+v", r)
	}
	p.ok("", "remember", "Releases are tagged by the release job", "--event-type", "decision", "--project", "demo")
	if got := strings.TrimSpace(p.ok("", "fleet", "identity", "--label", "runner-r")); got != line {
		t.Fatalf("identity after the rotation: %q, want the first key's line %q", got, line)
	}
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	if _, err := os.Stat(filepath.Join(root, fleetsign.PreviousKeyFile)); !os.IsNotExist(err) {
		t.Fatalf("the old key is kept after the stream holds the rotation: %v", err)
	}
	replicas := filepath.Join(dir, "replicas")
	p.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", replicas, "--expect", fleetFile)
	sameLedger(t, root, filepath.Join(replicas, id))
	p.ok("", "fleet", "verify", "--from", replicas, "--expect", fleetFile)

	// A second rotation, collected incrementally and from scratch.
	second, _, _ := fleetsign.LoadKey(root)
	p.ok("", "fleet", "rotate-key")
	p.ok("", "remember", "Staging is rebuilt nightly", "--event-type", "decision", "--project", "demo")
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	p.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", replicas, "--expect", fleetFile)
	sameLedger(t, root, filepath.Join(replicas, id))
	p.ok("", "fleet", "verify", "--from", replicas, "--expect", fleetFile)
	fresh := filepath.Join(dir, "fresh")
	p.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", fresh, "--durable", "fresh")
	sameLedger(t, root, filepath.Join(fresh, id))
	p.ok("", "fleet", "verify", "--from", fresh, "--expect", fleetFile)
	third, _, _ := fleetsign.LoadKey(root)

	// A forger's rotation to its own key, signed by its key under the
	// store's key header.
	raw, pos, hash := forgeRotation(t, root, id, third)
	_, forger, _ := ed25519.GenerateKey(rand.Reader)
	h := map[string]string{fleet.HeaderPosition: strconv.FormatUint(pos, 10), fleet.HeaderHash: hash,
		fleet.HeaderKey: fleetsign.EncodeKey(third.Public().(ed25519.PublicKey)), fleet.HeaderSignature: fleetsign.Sign(forger, id, pos, hash)}
	if err := fleettest.PublishRaw(srv.URL(), fleet.DefaultStream, fleet.Subject(id), raw, h); err != nil {
		t.Fatal(err)
	}
	r := p.run("", "fleet", "collect", "--nats", srv.URL(), "--into", replicas)
	want := "store " + id + ": replica stopped at position " + strconv.FormatUint(pos, 10) + ": refused: the signature does not verify"
	if r.code != 0 || !strings.Contains(r.stderr, want) {
		t.Fatalf("collect of a forged rotation: %+v, want %q", r, want)
	}
	if r := p.run("", "fleet", "verify", "--from", replicas); r.code != 3 || !strings.Contains(r.stderr, "store "+id+": position "+strconv.FormatUint(pos, 10)) {
		t.Fatalf("verify after the forged rotation: %+v", r)
	}

	srv.Shutdown()
	srv.WaitForShutdown()
	for i, k := range []ed25519.PrivateKey{first, second, third} {
		for _, c := range []string{string(k.Seed()), base64.StdEncoding.EncodeToString(k.Seed())} {
			for _, where := range []string{natsDir, replicas, fresh} {
				if hits, searched := filesContaining(t, where, c); len(hits) > 0 || searched == 0 {
					t.Errorf("key %d found in %v (%d files searched)", i, hits, searched)
				}
			}
		}
	}
}

// forgeRotation is a correctly chained store.key_rotated after root's
// head that names a forger's key and claims the store's current key as
// the previous one, signed by neither.
func forgeRotation(t *testing.T, root, id string, current ed25519.PrivateKey) (raw []byte, pos uint64, hash string) {
	t.Helper()
	st, err := bolt.OpenRoot(root, bolt.Options{ReadOnly: true, Projections: projections.All()})
	if err != nil {
		t.Fatal(err)
	}
	head, headHash, err := st.Head()
	version := uint64(0)
	_ = st.View(func(r *bolt.Reader) error { version = r.StreamVersion(events.StoreStream); return nil })
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, a, _ := ed25519.GenerateKey(rand.Reader)
	_, b, _ := ed25519.GenerateKey(rand.Reader)
	p := fleetsign.Rotation(id, a, b)
	p.PreviousKey = fleetsign.EncodeKey(current.Public().(ed25519.PublicKey))
	f := &events.Factory{Now: eventstest.Clock(eventstest.Epoch, time.Second), NewID: eventstest.IDs(78), Actor: "cli"}
	e, err := f.New(events.StoreStream, events.TypeStoreKeyRotated, &p)
	if err != nil {
		t.Fatal(err)
	}
	e.Version, e.Position = version+1, head+1
	e.Seal(headHash)
	return e.Encode(), head + 1, e.Hash
}

// A replica directory that is a symbolic link is reported by status and
// fails verify naming the store; it is never followed.
func TestFleetSymlinkedReplicaReported(t *testing.T) {
	srv := startNATS(t)
	p := fleetProject(t, 51)
	id := storeIDOf(t, filepath.Join(p.dir, ".tree-ring"))
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	elsewhere := t.TempDir()
	p.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", elsewhere)
	replicas := t.TempDir()
	if err := os.Symlink(filepath.Join(elsewhere, id), filepath.Join(replicas, id)); err != nil {
		t.Fatal(err)
	}
	if out := p.ok("", "fleet", "status", "--from", replicas); !lineWith(out, id, "symlink (not followed)") {
		t.Fatalf("status:\n%s", out)
	}
	r := p.run("", "fleet", "verify", "--from", replicas)
	if r.code != 3 || !strings.Contains(r.stderr, "store "+id+": the replica directory is a symbolic link, not followed") {
		t.Fatalf("verify: %+v", r)
	}
}

// A stopped replica stays stopped when either of the two files holding
// its stop record is deleted: status and verify still say so.
func TestFleetStopSurvivesOneFile(t *testing.T) {
	for _, name := range []string{"fleet-stopped.json", "fleet-collected.json"} {
		t.Run(name, func(t *testing.T) {
			srv := startNATS(t)
			p := fleetProject(t, 52)
			root := filepath.Join(p.dir, ".tree-ring")
			id := storeIDOf(t, root)
			p.ok("", "fleet", "publish", "--nats", srv.URL())
			replicas := t.TempDir()
			p.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", replicas)
			raw, pos, hash := forgeNext(t, root)
			if err := fleettest.PublishRaw(srv.URL(), fleet.DefaultStream, fleet.Subject(id), raw, map[string]string{
				fleet.HeaderPosition: strconv.FormatUint(pos, 10), fleet.HeaderHash: hash}); err != nil {
				t.Fatal(err)
			}
			if r := p.run("", "fleet", "collect", "--nats", srv.URL(), "--into", replicas); r.code != 0 || !strings.Contains(r.stderr, "replica stopped at position "+strconv.FormatUint(pos, 10)) {
				t.Fatalf("collect: %+v", r)
			}
			if err := os.Remove(filepath.Join(replicas, id, name)); err != nil {
				t.Fatal(err)
			}
			if out := p.ok("", "fleet", "status", "--from", replicas); !lineWith(out, id, "stopped at "+strconv.FormatUint(pos, 10)) {
				t.Fatalf("status without %s:\n%s", name, out)
			}
			r := p.run("", "fleet", "verify", "--from", replicas)
			if r.code != 3 || !strings.Contains(r.stderr, "store "+id+": position "+strconv.FormatUint(pos, 10)+": replica stopped by fleet collect: refused: unsigned") {
				t.Fatalf("verify without %s: %+v", name, r)
			}
		})
	}
}

// A store's label is recorded in its ledger (once per change), is the
// default of fleet identity's line, travels with the history and is
// shown by fleet status; a replica refuses to be labelled.
func TestFleetLabel(t *testing.T) {
	srv := startNATS(t)
	p := fleetProject(t, 53)
	root := filepath.Join(p.dir, ".tree-ring")
	id := storeIDOf(t, root)
	if out := p.ok("", "fleet", "label", "ci runner 7"); !strings.HasPrefix(out, "recorded the store's label ci-runner-7 ") {
		t.Fatalf("label: %s", out)
	}
	n := len(ledgerBytes(t, root))
	if out := p.ok("", "fleet", "label", "ci-runner-7"); !strings.Contains(out, "nothing recorded") || len(ledgerBytes(t, root)) != n {
		t.Fatalf("the same label again: %s (%d events, was %d)", out, len(ledgerBytes(t, root)), n)
	}
	if f := strings.Fields(p.ok("", "fleet", "identity")); len(f) != 3 || f[0] != id || f[2] != "ci-runner-7" {
		t.Fatalf("identity: %q", f)
	}
	p.ok("", "fleet", "label", "laptop-9")
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	replicas := t.TempDir()
	p.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", replicas)
	sameLedger(t, root, filepath.Join(replicas, id))
	if out := p.ok("", "fleet", "status", "--from", replicas); !lineWith(out, id+"  laptop-9", " ok") {
		t.Fatalf("status:\n%s", out)
	}
	if out := p.ok("", "fleet", "verify", "--from", replicas); !strings.Contains(out, "verified store "+id+" (laptop-9): ") {
		t.Fatalf("verify:\n%s", out)
	}
	if r := p.run("", "--root", filepath.Join(replicas, id), "fleet", "label", "x"); r.code == 0 || !strings.Contains(r.stderr, "this root is a fleet replica") {
		t.Fatalf("label on a replica: %+v", r)
	}
}

// init --label records the store's label as `fleet label` does, once: the
// same label again records nothing, and init without it keeps the label.
func TestInitLabel(t *testing.T) {
	p := newHP(t, ".claude")
	root := filepath.Join(p.dir, ".tree-ring")
	p.ok("", "init", "--label", "build host 3")
	id := storeIDOf(t, root)
	if f := strings.Fields(p.ok("", "fleet", "identity")); len(f) != 3 || f[0] != id || f[2] != "build-host-3" {
		t.Fatalf("identity after init --label: %q", f)
	}
	n := len(ledgerBytes(t, root))
	p.ok("", "init", "--label", "build-host-3")
	p.ok("", "init")
	if got := len(ledgerBytes(t, root)); got != n {
		t.Fatalf("a second init appended %d events", got-n)
	}
	if f := strings.Fields(p.ok("", "fleet", "identity")); len(f) != 3 || f[2] != "build-host-3" {
		t.Fatalf("identity after a plain init: %q", f)
	}
	if r := p.run("", "init", "--dry-run", "--label", "x"); r.code != 0 || len(ledgerBytes(t, root)) != n {
		t.Fatalf("init --dry-run --label: %+v", r)
	}
}
