package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/fleetcli"
	"github.com/tree-ring/tree-ring/cmd/internal/storekey"
	"github.com/tree-ring/tree-ring/projections"
)

// fleetInProcess runs tree-ring-fleet's commands in the test process on
// the invocation's clock, so in-process tests of `tree-ring fleet
// publish|collect` go through the dispatch (runCompanion) without a
// build.
func fleetInProcess(now func() time.Time) companionFunc {
	return func(ctx context.Context, argv []string, stdio IO) int {
		return fleetcli.Main(ctx, argv, stdio, fleetcli.Deps{Now: now})
	}
}

// fleet is tree-ring-fleet in process on the project's clock.
func (p *hp) fleet() companionFunc {
	return fleetInProcess(func() time.Time { p.now = p.now.Add(time.Second); return p.now })
}

// fleetBinary is buildBinary's tree-ring with tree-ring-fleet built beside
// it, for whole-process fleet tests.
func fleetBinary(t *testing.T) string {
	t.Helper()
	bin := buildBinary(t)
	fleetOnce.Do(func() {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(filepath.Dir(bin), cli.Fleet.Program), "../tree-ring-fleet").CombinedOutput(); err != nil {
			fleetErr = fmt.Errorf("go build tree-ring-fleet: %v\n%s", err, out)
		}
	})
	if fleetErr != nil {
		t.Fatal(fleetErr)
	}
	return bin
}

var (
	fleetOnce sync.Once
	fleetErr  error
)

// ledgerSource is root's ledger as publish reads it.
func ledgerSource(root string) *fleetcli.LedgerSource {
	open := func() (*bolt.Store, error) {
		return bolt.OpenRoot(root, bolt.Options{ReadOnly: true, LockTimeout: 3 * time.Second, Projections: projections.All()})
	}
	st, err := open()
	if err != nil {
		panic(err)
	}
	defer st.Close()
	id, err := storekey.StoreID(st)
	if err != nil {
		panic(err)
	}
	// The store's signing key, as fleetProject made it (fleet identity).
	signer, ok, err := storekey.LoadSigner(context.Background(), root, st, id)
	if err != nil || !ok {
		panic(fmt.Sprintf("the store under %s has no signing key (fleet identity makes it): %v", root, err))
	}
	return &fleetcli.LedgerSource{Open: open, Signer: signer}
}

// replicaDir is a collector's directory as collect writes it.
func replicaDir(dir string) *fleetcli.ReplicaDir {
	return &fleetcli.ReplicaDir{Dir: dir, LockTimeout: 3 * time.Second, Now: time.Now}
}

// The dispatch, whole-process: tree-ring execs tree-ring-fleet found
// beside it, with the global flags given before `fleet` moved after the
// command word, and its exit code is the companion's; without the
// companion the command says how to get it and exits 2.
func TestFleetCompanionDispatch(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tree-ring")
	data, err := os.ReadFile(buildBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	comp := filepath.Join(dir, cli.Fleet.Program)
	run := func(wantCode int, env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != wantCode {
			t.Fatalf("tree-ring %s: exit %d, want %d:\n%s", strings.Join(args, " "), code, wantCode, out)
		}
		return string(out)
	}
	p := fleetProject(t, 20)
	root := filepath.Join(p.dir, ".tree-ring")
	noPath := []string{"PATH=" + t.TempDir()} // no tree-ring-fleet on PATH either

	// Missing: the documented error, exit 2, nothing done.
	out := run(exitError, noPath, "--root", root, "fleet", "publish", "--nats", "nats://127.0.0.1:1")
	for _, want := range []string{
		"tree-ring: fleet publish needs the companion program tree-ring-fleet, which is neither beside tree-ring in " + dir + " nor on PATH; nothing was done",
		"go install github.com/tree-ring/tree-ring/cmd/tree-ring-fleet@",
		"go build -o " + comp + " ./cmd/tree-ring-fleet",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing companion: want %q in\n%s", want, out)
		}
	}
	// Still listed.
	if out := run(0, noPath, "fleet"); !strings.Contains(out, "publish") || !strings.Contains(out, "collect") {
		t.Fatalf("fleet group help:\n%s", out)
	}

	if b, err := exec.Command("go", "build", "-o", comp, "../tree-ring-fleet").CombinedOutput(); err != nil {
		t.Fatalf("go build tree-ring-fleet: %v\n%s", err, b)
	}
	srv := startNATS(t)
	out = run(0, noPath, "--root", root, "--json", "fleet", "publish", "--nats", srv.URL())
	if !strings.Contains(out, `"ok":true`) || !strings.Contains(out, `"published":`) {
		t.Fatalf("publish through tree-ring: %s", out)
	}
	into := t.TempDir()
	run(0, noPath, "fleet", "collect", "--root", root, "--nats", srv.URL(), "--into", into)
	sameLedger(t, root, filepath.Join(into, storeIDOf(t, root)))
	// The companion's exit code is tree-ring's: a usage error is 2, a
	// verification failure of the same replicas would be 3 (fleet verify
	// is tree-ring's own).
	if out = run(exitError, noPath, "fleet", "publish", "--root", root); !strings.Contains(out, "tree-ring-fleet: --nats URL (or NATS_URL) is required") {
		t.Fatalf("usage error through tree-ring: %s", out)
	}
	if out = run(0, noPath, "fleet", "publish", "--help"); !strings.Contains(out, "--creds") {
		t.Fatalf("help through tree-ring: %s", out)
	}
	run(0, noPath, "fleet", "verify", "--from", into)
	// fleet status is tree-ring's own, and the companion's with --nats:
	// the global flags move after the word there too.
	id := storeIDOf(t, root)
	if out = run(0, noPath, "fleet", "status", "--from", into); !strings.Contains(out, id) {
		t.Fatalf("status: %s", out)
	}
	if out = run(0, noPath, "--json", "fleet", "status", "--from", into, "--nats", srv.URL()); !strings.Contains(out, `"store_id":"`+id+`"`) || !strings.Contains(out, `"lag":0`) || !strings.Contains(out, `"stream_head_at":"`) {
		t.Fatalf("status --nats through tree-ring: %s", out)
	}
	if out = run(exitError, noPath, "fleet", "status", "--from", into, "--nats=nats://127.0.0.1:1", "--timeout", "1s"); !strings.Contains(out, "tree-ring-fleet: connect to NATS") {
		t.Fatalf("status --nats without a server through tree-ring: %s", out)
	}
}
