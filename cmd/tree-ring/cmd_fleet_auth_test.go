package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/tree-ring/tree-ring/adapters/fleet/fleettest"
)

func TestFleetNKey(t *testing.T) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := filepath.Join(t.TempDir(), "host.nk")
	if err := os.WriteFile(seedFile, append(seed, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := fleettest.StartAuth(t.TempDir(), fleettest.Auth{NKey: pub})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	p := fleetProject(t, 10)
	if r := p.run("", "fleet", "publish", "--nats", srv.URL(), "--timeout", "2s"); r.code != 2 || !strings.Contains(r.stderr, "connect to NATS") {
		t.Fatalf("without the seed: %+v", r)
	}
	if r := p.run("", "fleet", "publish", "--nats", srv.URL(), "--nkey", filepath.Join(t.TempDir(), "absent")); r.code != 2 || !strings.Contains(r.stderr, "nkey seed file") {
		t.Fatalf("absent seed file: %+v", r)
	}
	out := p.ok("", "fleet", "publish", "--nats", srv.URL(), "--nkey", seedFile)
	if !strings.HasPrefix(out, "published ") || strings.Contains(out, string(seed)) {
		t.Fatalf("publish: %s", out)
	}
	// The nats CLI's NATS_NKEY names the seed file when --nkey is not given.
	p.env["NATS_NKEY"] = seedFile
	replicas := t.TempDir()
	r := p.run("", "--log-level", "debug", "fleet", "collect", "--nats", srv.URL(), "--into", replicas)
	if r.code != 0 || strings.Contains(r.stdout+r.stderr, string(seed)) {
		t.Fatalf("collect with NATS_NKEY: %+v", r)
	}
	root := filepath.Join(p.dir, ".tree-ring")
	sameLedger(t, root, filepath.Join(replicas, storeIDOf(t, root)))
}

// testPKI writes a CA and, signed by it, a server certificate for
// 127.0.0.1 and a client certificate; it returns their file names.
func testPKI(t *testing.T) (ca, srvCert, srvKey, cliCert, cliKey string) {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	now := time.Now()
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tree-ring test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	ca = write("ca.pem", "CERTIFICATE", caDER)
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage, ips []net.IP) (string, string) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{usage},
			KeyUsage: x509.KeyUsageDigitalSignature, IPAddresses: ips}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kd, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "EC PRIVATE KEY", kd)
	}
	srvCert, srvKey = leaf("server", 2, x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	cliCert, cliKey = leaf("client", 3, x509.ExtKeyUsageClientAuth, nil)
	return
}

func TestFleetMutualTLS(t *testing.T) {
	ca, sc, sk, cc, ck := testPKI(t)
	srv, err := fleettest.StartAuth(t.TempDir(), fleettest.Auth{TLSCert: sc, TLSKey: sk, TLSCA: ca})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	p := fleetProject(t, 11)
	if r := p.run("", "fleet", "publish", "--nats", srv.URL(), "--tls-ca", ca, "--timeout", "2s"); r.code != 2 || !strings.Contains(r.stderr, "connect to NATS") {
		t.Fatalf("without a client certificate: %+v", r)
	}
	if r := p.run("", "fleet", "publish", "--nats", srv.URL(), "--tls-cert", cc, "--tls-key", ck, "--timeout", "2s"); r.code != 2 {
		t.Fatalf("without the CA (the server is not trusted): %+v", r)
	}
	out := p.ok("", "fleet", "publish", "--nats", srv.URL(), "--tls-ca", ca, "--tls-cert", cc, "--tls-key", ck)
	if !strings.HasPrefix(out, "published ") {
		t.Fatalf("publish: %s", out)
	}
	// The nats CLI's NATS_CA, NATS_CERT and NATS_KEY name the files when
	// the flags are not given.
	p.env["NATS_CA"], p.env["NATS_CERT"], p.env["NATS_KEY"] = ca, cc, ck
	replicas := t.TempDir()
	p.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", replicas)
	root := filepath.Join(p.dir, ".tree-ring")
	sameLedger(t, root, filepath.Join(replicas, storeIDOf(t, root)))
}

// --creds against a server in operator (JWT) mode: the account's user
// publishes and collects; a well-formed file of another operator's user,
// this user's JWT with another seed, a malformed file and a missing file
// are each refused with exit 2 and their own cause; and no byte of the
// seed or the JWT reaches stdout, stderr (at debug level), the project's
// store, the replicas or the server's files.
func TestFleetCreds(t *testing.T) {
	natsDir := t.TempDir()
	srv, err := fleettest.StartOperator(natsDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	good, err := srv.Creds()
	if err != nil {
		t.Fatal(err)
	}
	userJWT, err := jwt.ParseDecoratedJWT(good)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := jwt.ParseDecoratedNKey(good)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	foreign, err := fleettest.ForeignCreds()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	mismatched := bytes.Replace(good, seed, otherSeed, 1) // FormatUserConfig refuses the pair
	if bytes.Equal(mismatched, good) {
		t.Fatal("the seed is not in the creds file")
	}
	dir := t.TempDir()
	file := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goodFile := file("host.creds", good)
	p := fleetProject(t, 11)
	url := srv.URL()
	var outputs []string
	for _, tc := range []struct {
		name, creds string
		want        []string
	}{
		{"no credentials", "", []string{"connect to NATS", "authorization violation"}},
		{"another operator's user", file("foreign.creds", foreign), []string{"connect to NATS", "authorization violation"}},
		{"this user's JWT with another seed", file("mismatched.creds", mismatched), []string{"connect to NATS", "authorization violation"}},
		{"not a credentials file", file("junk.creds", []byte("CANARY-not-creds "+string(seed[:8])+"\n")), []string{"connect to NATS", "no nkey seed found"}},
		{"absent", filepath.Join(dir, "absent.creds"), []string{"connect to NATS", "no such file or directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--log-level", "debug", "fleet", "publish", "--nats", url, "--timeout", "2s"}
			if tc.creds != "" {
				args = append(args, "--creds", tc.creds)
			}
			r := p.run("", args...)
			if r.code != exitError || r.stdout != "" {
				t.Fatalf("want exit 2 and no output: %+v", r)
			}
			for _, w := range tc.want {
				if !strings.Contains(strings.ToLower(r.stderr), strings.ToLower(w)) {
					t.Errorf("stderr lacks %q: %s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "CANARY") {
				t.Errorf("stderr echoes the file: %s", r.stderr)
			}
			outputs = append(outputs, r.stderr)
		})
	}
	r := p.run("", "--log-level", "debug", "--json", "fleet", "publish", "--nats", url, "--creds", goodFile)
	if r.code != 0 || !strings.Contains(r.stdout, `"ok":true`) {
		t.Fatalf("publish with the creds: %+v", r)
	}
	replicas := t.TempDir()
	c := p.run("", "--log-level", "debug", "fleet", "collect", "--nats", url, "--creds", goodFile, "--into", replicas)
	if c.code != 0 {
		t.Fatalf("collect with the creds: %+v", c)
	}
	root := filepath.Join(p.dir, ".tree-ring")
	sameLedger(t, root, filepath.Join(replicas, storeIDOf(t, root)))
	outputs = append(outputs, r.stdout, r.stderr, c.stdout, c.stderr)
	srv.Shutdown()
	srv.WaitForShutdown()
	for _, secret := range []string{string(seed), userJWT} {
		for i, o := range outputs {
			if strings.Contains(o, secret) {
				t.Errorf("output %d holds a secret of the creds file: %s", i, o)
			}
		}
		for _, where := range []string{root, replicas, natsDir} {
			hits, searched := filesContaining(t, where, secret)
			if len(hits) > 0 {
				t.Errorf("a secret of the creds file is in %v", hits)
			}
			if searched == 0 {
				t.Errorf("nothing searched under %s", where)
			}
		}
	}
}
