package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
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
			r := p.run("", "fleet", "collect", "--nats", srv.URL(), "--into", good)
			if r.code != 0 || !strings.Contains(r.stderr, "store "+id+": new store, trusting the key its first message carries ("+identityKey(t, p)+"; pinned on first sight") {
				t.Fatalf("first collect: %+v", r)
			}
			p.ok("", "fleet", "verify", "--from", good)

			raw, pos, hash := forgeNext(t, root)
			hostKey := identityKey(t, p)
			h := c.headers(id, pos, hash, hostKey)
			h[fleet.HeaderPosition], h[fleet.HeaderHash] = strconv.FormatUint(pos, 10), hash
			if err := fleettest.PublishRaw(srv.URL(), fleet.DefaultStream, fleet.Subject(id), raw, h); err != nil {
				t.Fatal(err)
			}
			// The auditor's next collect refuses it.
			r = p.run("", "fleet", "collect", "--nats", srv.URL(), "--into", good)
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
	if out := p.ok("", "fleet", "status", "--from", dir); !lineWith(out, id, " ok") {
		t.Fatalf("status of the good replica:\n%s", out)
	}
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
	// fleet status says so too, without a full verify.
	if out := p.ok("", "fleet", "status", "--from", dir); !lineWith(out, id, "unsigned at "+strconv.FormatUint(pos, 10)) {
		t.Fatalf("status of the forced replica:\n%s", out)
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
	// A store without a key (init does not make one yet) gets it from its
	// first publish: one store.key_recorded; with a key, publish records
	// nothing.
	_, hadKey, err := fleetsign.LoadKey(root)
	if err != nil {
		t.Fatal(err)
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
	recorded := 0
	for _, raw := range after {
		if strings.Contains(string(raw), `"type":"store.key_recorded"`) {
			recorded++
			if !strings.Contains(string(raw), fleetsign.EncodeKey(priv.Public().(ed25519.PublicKey))) {
				t.Fatalf("the recorded key is not the key file's: %s", raw)
			}
		}
	}
	want := before + 1
	if hadKey {
		want = before
	}
	if len(after) != want || recorded != 1 {
		t.Fatalf("the first publish appended %d events (%d key records; a key before: %v)", len(after)-before, recorded, hadKey)
	}
	// Another publish records nothing more.
	p.ok("", "fleet", "publish", "--nats", srv.URL())
	if n := len(ledgerBytes(t, root)); n != len(after) {
		t.Fatalf("the second publish appended %d events", n-len(after))
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

// A fleet file pins each store's key and names the fleet: verify fails on
// a listed store without a replica and on a replica whose key is not the
// listed one, reports replicas the file does not list as unexpected
// without failing on them; status labels the rows and shows missing,
// unexpected and stale stores; collect --expect collects only listed
// stores. Junk on a made-up store's subject is an unexpected store, never
// a replica that fails every verify.
func TestFleetExpectedStores(t *testing.T) {
	srv := startNATS(t)
	a, b, c := fleetProject(t, 40), fleetProject(t, 41), fleetProject(t, 42)
	idA, idB, idC := storeIDOf(t, filepath.Join(a.dir, ".tree-ring")), storeIDOf(t, filepath.Join(b.dir, ".tree-ring")), storeIDOf(t, filepath.Join(c.dir, ".tree-ring"))
	lineA := strings.TrimSpace(a.ok("", "fleet", "identity", "--label", "runner-a"))
	lineC := strings.TrimSpace(c.ok("", "fleet", "identity", "--label", "laptop c"))
	if !strings.HasPrefix(lineA, idA+" ") || !strings.HasSuffix(lineC, " laptop-c") {
		t.Fatalf("identity lines: %q %q", lineA, lineC)
	}
	dir := t.TempDir()
	fleetFile := filepath.Join(dir, "fleet.txt")
	if err := os.WriteFile(fleetFile, []byte("# the fleet\n"+lineA+"\n\n"+lineC+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a.ok("", "fleet", "publish", "--nats", srv.URL())
	b.ok("", "fleet", "publish", "--nats", srv.URL())
	const junk = "0b7c1f6e-5a4d-4c3b-9a2e-1f0e9d8c7b6a"
	if err := fleettest.PublishRaw(srv.URL(), fleet.DefaultStream, fleet.Subject(junk), []byte("not an event"), map[string]string{fleet.HeaderPosition: "1"}); err != nil {
		t.Fatal(err)
	}

	replicas := filepath.Join(dir, "replicas")
	r := a.run("", "fleet", "collect", "--nats", srv.URL(), "--into", replicas)
	if r.code != 0 || !strings.Contains(r.stdout, junk+"  -") || !strings.Contains(r.stdout, "unexpected store") {
		t.Fatalf("collect: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(replicas, junk)); !os.IsNotExist(err) {
		t.Fatalf("a replica of the junk store: %v", err)
	}
	a.ok("", "fleet", "verify", "--from", replicas)

	r = a.run("", "fleet", "verify", "--from", replicas, "--expect", fleetFile)
	if r.code != 3 || !strings.Contains(r.stdout, "verified store "+idA+" (runner-a)") ||
		!strings.Contains(r.stdout, "unexpected store "+idB) ||
		!strings.Contains(r.stdout, "FAILED store "+idC+" (laptop-c): missing") ||
		!strings.Contains(r.stderr, "store "+idC+" (laptop-c): missing") {
		t.Fatalf("verify --expect: %+v", r)
	}
	var v struct {
		OK       bool `json:"ok"`
		Failures []struct {
			StoreID string `json:"store_id"`
		} `json:"failures"`
		Unexpected []string `json:"unexpected"`
	}
	r = a.run("", "--json", "fleet", "verify", "--from", replicas, "--expect", fleetFile)
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 3 || v.OK || len(v.Failures) != 1 || v.Failures[0].StoreID != idC ||
		len(v.Unexpected) != 1 || v.Unexpected[0] != idB {
		t.Fatalf("--json verify --expect: %+v %v", r, err)
	}

	out := a.ok("", "fleet", "status", "--from", replicas, "--expect", fleetFile, "--at", "2100-01-01T00:00:00Z", "--stale", "24h")
	for _, want := range []string{idA + "  runner-a", idB + "  -", idC + "  laptop-c"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	for id, state := range map[string]string{idA: "stale", idB: "unexpected", idC: "missing"} {
		if !lineWith(out, id, state) {
			t.Errorf("status: %s is not %s:\n%s", id, state, out)
		}
	}

	// Another key listed for a store: its replica fails.
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	wrong := filepath.Join(dir, "wrong.txt")
	if err := os.WriteFile(wrong, []byte(fleetsign.Line(idA, other.Public().(ed25519.PublicKey), "runner-a")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := a.run("", "fleet", "verify", "--from", replicas, "--expect", wrong); r.code != 3 || !strings.Contains(r.stderr, "store "+idA+" (runner-a): the replica's store key is not the fleet file's") {
		t.Fatalf("verify with another key listed: %+v", r)
	}

	// collect --expect: only the listed stores, checked against their
	// listed keys; the others are reported, not collected.
	pinned := filepath.Join(dir, "pinned")
	r = a.run("", "fleet", "collect", "--nats", srv.URL(), "--into", pinned, "--durable", "pinned", "--expect", fleetFile)
	if r.code != 0 || !lineWith(r.stdout, idB, "unexpected store") || !lineWith(r.stdout, junk, "unexpected store") {
		t.Fatalf("collect --expect: %+v", r)
	}
	if ids, err := os.ReadDir(pinned); err != nil || len(ids) != 1 || ids[0].Name() != idA {
		t.Fatalf("collect --expect wrote %v (%v)", ids, err)
	}
	// And with another key listed, the store is refused at its first event.
	r = a.run("", "fleet", "collect", "--nats", srv.URL(), "--into", filepath.Join(dir, "wrong"), "--durable", "wrong", "--expect", wrong)
	if r.code != 0 || !strings.Contains(r.stderr, "store "+idA+": replica stopped at position 1: refused: the signature does not verify") {
		t.Fatalf("collect --expect with another key: %+v", r)
	}
}

// lineWith reports whether one line of out holds both a and b.
func lineWith(out, a, b string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, a) && strings.Contains(l, b) {
			return true
		}
	}
	return false
}
