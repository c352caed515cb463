package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tree-ring/tree-ring/adapters/fleet"
	"github.com/tree-ring/tree-ring/adapters/fleet/fleetsign"
	"github.com/tree-ring/tree-ring/adapters/fleet/fleettest"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/projections"
)

// forgeNext is what a forger with publish rights on the store's subject
// makes: the next event of the chain (a run.started, a correctly chained
// append), sealed so that position, prev_hash and hash are all consistent.
func forgeNext(t *testing.T, root string) (raw []byte, pos uint64, hash string) {
	t.Helper()
	st, err := bolt.OpenRoot(root, bolt.Options{ReadOnly: true, Projections: projections.All()})
	if err != nil {
		t.Fatal(err)
	}
	head, headHash, err := st.Head()
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	f := &events.Factory{Now: eventstest.Clock(eventstest.Epoch, time.Second), NewID: eventstest.IDs(77), Actor: "cli"}
	id := f.NewID()
	e, err := f.New(events.RunStream(id.String()), events.TypeRunStarted, &events.RunStarted{
		RunID: id.String(), ScopeKey: "0123456789abcdef01234567", Command: events.RunCmdEventsImport,
		Stage: "append", PID: 1, StartedAt: events.FormatRunTime(eventstest.Epoch),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.ID, e.Version, e.Position = id, 1, head+1
	e.Seal(headHash)
	return e.Encode(), head + 1, e.Hash
}

// A forger who re-seals a consistent chain still cannot sign it: collect
// refuses the forged event naming store and position, whether it carries
// no signature, a signature by another key under the store's key header,
// or another key altogether; a replica into which it was forced does not
// verify.
func TestFleetForgedEventRefused(t *testing.T) {
	_, other, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherPub := fleetsign.EncodeKey(other.Public().(ed25519.PublicKey))
	cases := []struct {
		name, why string
		headers   func(id string, pos uint64, hash, hostKey string) map[string]string
	}{
		{"unsigned", "refused: unsigned", func(_ string, _ uint64, _, hostKey string) map[string]string {
			return map[string]string{fleet.HeaderKey: hostKey}
		}},
		{"signed by another key", "refused: the signature does not verify", func(id string, pos uint64, hash, hostKey string) map[string]string {
			return map[string]string{fleet.HeaderKey: hostKey, fleet.HeaderSignature: fleetsign.Sign(other, id, pos, hash)}
		}},
		{"another key altogether", "refused: the signature does not verify", func(id string, pos uint64, hash, _ string) map[string]string {
			return map[string]string{fleet.HeaderKey: otherPub, fleet.HeaderSignature: fleetsign.Sign(other, id, pos, hash)}
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := startNATS(t)
			p := fleetProject(t, 20+i)
			root := filepath.Join(p.dir, ".tree-ring")
			id := storeIDOf(t, root)
			p.ok("", "fleet", "publish", "--nats", srv.URL())
			good := t.TempDir()
			p.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", good)
			p.ok("", "fleet", "verify", "--from", good)

			raw, pos, hash := forgeNext(t, root)
			hostKey := identityKey(t, p)
			h := c.headers(id, pos, hash, hostKey)
			h[fleet.HeaderPosition], h[fleet.HeaderHash] = strconv.FormatUint(pos, 10), hash
			if err := fleettest.PublishRaw(srv.URL(), fleet.DefaultStream, fleet.Subject(id), raw, h); err != nil {
				t.Fatal(err)
			}
			// The auditor's next collect refuses it.
			r := p.run("", "fleet", "collect", "--nats", srv.URL(), "--into", good)
			want := "store " + id + ": replica stopped at position " + strconv.FormatUint(pos, 10) + ": " + c.why
			if r.code != 0 || !strings.Contains(r.stderr, want) {
				t.Fatalf("collect of the forged event: %+v, want %q", r, want)
			}
			if got := ledgerBytes(t, filepath.Join(good, id)); uint64(len(got)) != pos-1 {
				t.Fatalf("the replica holds %d events, want the %d the host signed", len(got), pos-1)
			}
			if r := p.run("", "fleet", "verify", "--from", good); r.code != 3 || !strings.Contains(r.stderr, "store "+id+": position "+strconv.FormatUint(pos, 10)) {
				t.Fatalf("verify after the refusal: %+v", r)
			}
			// A fresh auditor the same.
			fresh := t.TempDir()
			r = p.run("", "fleet", "collect", "--nats", srv.URL(), "--into", fresh, "--durable", "fresh")
			if r.code != 0 || !strings.Contains(r.stderr, want) {
				t.Fatalf("fresh collect: %+v, want %q", r, want)
			}
		})
	}

	// Forced into a replica past collect (a write to its files), the
	// forged event fails verify: the store's key signed only up to the
	// event before it.
	srv := startNATS(t)
	p := fleetProject(t, 30)
	root := filepath.Join(p.dir, ".tree-ring")
	id := storeIDOf(t, root)
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	dir := t.TempDir()
	p.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", dir)
	raw, pos, _ := forgeNext(t, root)
	st, err := bolt.OpenRoot(filepath.Join(dir, id), bolt.Options{Projections: projections.All()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.Replicate(context.Background(), [][]byte{raw})
	st.Close()
	if err != nil || res.Appended != 1 {
		t.Fatalf("forcing the forged event into the replica: %+v %v", res, err)
	}
	r := p.run("", "fleet", "verify", "--from", dir)
	want := "store " + id + ": position " + strconv.FormatUint(pos, 10) + ": not signed by the store's key"
	if r.code != 3 || !strings.Contains(r.stderr, want) {
		t.Fatalf("verify of the forced replica: %+v, want %q", r, want)
	}
	// Deleting the signature record does not help.
	if err := os.Remove(filepath.Join(dir, id, "fleet-signed.json")); err != nil {
		t.Fatal(err)
	}
	if r := p.run("", "fleet", "verify", "--from", dir); r.code != 3 || !strings.Contains(r.stderr, "store "+id+": position 1: no event of the replica is signed") {
		t.Fatalf("verify without the signature record: %+v", r)
	}
}

// identityKey is the public key `fleet identity` prints for p's store.
func identityKey(t *testing.T, p *hp) string {
	t.Helper()
	f := strings.Fields(p.ok("", "fleet", "identity", "--label", "host a"))
	if len(f) != 3 || f[2] != "host-a" {
		t.Fatalf("identity line: %q", f)
	}
	return f[1]
}

// The store's private key stays on the host: made 0600 by the first
// publish of a store without one, recorded (public half only) in the
// ledger, and in no form (PEM, seed bytes, base64, hex) in the ledger, in
// the server's files (every published message) or in the replicas.
func TestFleetSigningKeyNeverLeaves(t *testing.T) {
	natsDir := t.TempDir()
	srv, err := fleettest.Start(natsDir, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	p := newHP(t, ".claude")
	p.init()
	root := filepath.Join(p.dir, ".tree-ring")
	before := len(ledgerBytes(t, root))
	if _, ok, err := fleetsign.LoadKey(root); ok || err != nil {
		t.Fatalf("a key before the first publish: %v %v", ok, err)
	}
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	priv, ok, err := fleetsign.LoadKey(root)
	if !ok || err != nil {
		t.Fatalf("no key after the first publish: %v", err)
	}
	fi, err := os.Stat(filepath.Join(root, fleetsign.KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	after := ledgerBytes(t, root)
	if len(after) != before+1 || !strings.Contains(string(after[before]), `"type":"store.key_recorded"`) ||
		!strings.Contains(string(after[before]), fleetsign.EncodeKey(priv.Public().(ed25519.PublicKey))) {
		t.Fatalf("the first publish recorded %d events, the last %s", len(after)-before, after[len(after)-1])
	}
	// A second publish records nothing more.
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	if n := len(ledgerBytes(t, root)); n != before+1 {
		t.Fatalf("the second publish appended %d events", n-before-1)
	}
	dir := t.TempDir()
	p.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", dir)
	p.ok("", "fleet", "verify", "--from", dir)
	srv.Shutdown()
	srv.WaitForShutdown()
	pemBytes, err := os.ReadFile(filepath.Join(root, fleetsign.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	seed := priv.Seed()
	canaries := []string{string(seed), string(priv), base64.StdEncoding.EncodeToString(seed), base64.StdEncoding.EncodeToString(priv),
		base64.RawURLEncoding.EncodeToString(seed), hex.EncodeToString(seed), strings.TrimSpace(string(pemBytes))}
	// The public half is found (so the searches read the right bytes).
	if hits, _ := filesContaining(t, natsDir, fleetsign.EncodeKey(priv.Public().(ed25519.PublicKey))); len(hits) == 0 {
		t.Fatal("the server's files hold no public key: the search would prove nothing")
	}
	ledger, err := os.ReadFile(filepath.Join(root, bolt.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range canaries {
		if strings.Contains(string(ledger), c) {
			t.Errorf("canary %d is in the project's ledger", i)
		}
		for _, where := range []string{natsDir, dir} {
			if hits, searched := filesContaining(t, where, c); len(hits) > 0 || searched == 0 {
				t.Errorf("canary %d found in %v (%d files searched)", i, hits, searched)
			}
		}
	}
}

// The nats CLI's conventions: NATS_URL when --nats is not given,
// NATS_CREDS when --creds is not, and a token read from --token-file
// (never from an argument, never printed).
func TestFleetTokenFileAndEnvironment(t *testing.T) {
	const token = "tok-CANARY-91c2"
	srv, err := fleettest.StartAuth(t.TempDir(), fleettest.Auth{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	p := fleetProject(t, 31)
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	if err := os.WriteFile(good, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("wrong-CANARY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := p.run("", "fleet", "publish", "--timeout", "2s"); r.code != 2 || !strings.Contains(r.stderr, "--nats URL (or NATS_URL) is required") {
		t.Fatalf("without a server: %+v", r)
	}
	p.env["NATS_URL"] = srv.URL()
	if r := p.run("", "fleet", "publish", "--token-file", bad, "--timeout", "2s"); r.code != 2 || !strings.Contains(r.stderr, "connect to NATS") || strings.Contains(r.stderr+r.stdout, "CANARY") {
		t.Fatalf("wrong token: %+v", r)
	}
	if out := p.ok("", "fleet", "publish", "--token-file", good); !strings.HasPrefix(out, "published ") || strings.Contains(out, "CANARY") {
		t.Fatalf("publish with NATS_URL and the token file: %s", out)
	}
	replicas := t.TempDir()
	p.ok("", "fleet", "collect", "--token-file", good, "--into", replicas)
	root := filepath.Join(p.dir, ".tree-ring")
	sameLedger(t, root, filepath.Join(replicas, storeIDOf(t, root)))
	// NATS_CREDS names the credentials file (here one that is not there).
	p.env["NATS_CREDS"] = filepath.Join(dir, "absent.creds")
	if r := p.run("", "fleet", "publish", "--timeout", "2s"); r.code != 2 || !strings.Contains(r.stderr, "absent.creds") {
		t.Fatalf("NATS_CREDS: %+v", r)
	}
}

// publish refuses an operator's stream whose limits would drop history,
// with the setting and the exact command that fixes it.
func TestFleetPublishRefusesDroppingStream(t *testing.T) {
	srv := startNATS(t)
	if err := fleettest.CreateStream(srv.URL(), jetstream.StreamConfig{Name: fleet.DefaultStream, Subjects: []string{fleet.SubjectWildcard},
		AllowAtomicPublish: true, MaxMsgs: 1000, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	p := fleetProject(t, 32)
	r := p.run("", "fleet", "publish", "--nats", srv.URL(), "--timeout", "2s")
	if r.code != 2 || !strings.Contains(r.stderr, "stream TREE_RING: max_msgs 1000 drops the oldest events") ||
		!strings.Contains(r.stderr, "nats stream edit TREE_RING --retention limits --max-msgs=-1") {
		t.Fatalf("publish to a dropping stream: %+v", r)
	}
	if n, err := fleettest.SubjectCount(srv.URL(), fleet.DefaultStream, fleet.Subject(storeIDOf(t, filepath.Join(p.dir, ".tree-ring")))); err != nil || n != 0 {
		t.Fatalf("the stream holds %d messages (%v)", n, err)
	}
}
