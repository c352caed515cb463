package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events/eventstest"
)

var _ = eventstest.UpdateFlag()

// result is what one in-process invocation produced.
type result struct {
	code           int
	stdout, stderr string
}

// runCmd runs cmd with its output captured: a non-zero exit is the result's
// code, any other failure to run it fails the test.
func runCmd(t testing.TB, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

// invocation is one in-process run of tree-ring: the one driver every
// cmd test goes through (runCLI, cliSession, memCLI and hp give it their
// clock, ids, environment and root).
type invocation struct {
	ctx    context.Context // nil: context.Background()
	deps   deps
	env    map[string]string
	stdin  string
	stdout io.Writer              // nil: captured in the result
	getwd  func() (string, error) // nil: os.Getwd
	// stderrTerminal pretends stderr is a terminal (IO.StderrTerminal).
	stderrTerminal bool
}

// run runs tree-ring with exactly args.
func (in invocation) run(args ...string) result {
	ctx := in.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	var out, errb bytes.Buffer
	stdout := in.stdout
	if stdout == nil {
		stdout = &out
	}
	stdio := IO{Stdin: strings.NewReader(in.stdin), Stdout: stdout, Stderr: &errb, Getenv: func(k string) string { return in.env[k] }, Getwd: in.getwd, StderrTerminal: in.stderrTerminal}
	code := mainWith(ctx, args, stdio, in.deps)
	return result{code, out.String(), errb.String()}
}

// runCLI runs tree-ring in-process with a fixed clock and id source.
func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return invocation{deps: testDeps(), stdin: stdin}.run(args...)
}

// testDeps is the clock, id and entropy sources of one runCLI call. Ids
// carry a marker byte and the call's number, so the events a command
// appends (run records included) never collide with fixture ids
// (eventstest.IDs(0)) nor with an earlier call's; within a call they are
// sequential. Receipt ids come from the call's entropy, so they too are
// reproducible and distinct per call.
func testDeps() deps {
	call := uint32(cliCalls.Add(1))
	now := eventstest.Clock(eventstest.Epoch, time.Second)
	return deps{Clock: Clock{
		Now:     now,
		NewID:   eventstest.IDs(0xCC000000 | call&0xFFFFFF),
		Entropy: eventstest.Entropy(0xCC000000 | call&0xFFFFFF),
		Nonce:   testNonce,
	}, Seams: Seams{Companion: fleetInProcess(now)}}
}

var cliCalls atomic.Uint64

// golden compares got with testdata/NAME (eventstest.Golden; -update
// rewrites it).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	eventstest.Golden(t, filepath.Join("testdata", name), got)
}

var (
	binOnce sync.Once
	binDir  string // removed by TestMain
	binPath string
	binErr  error
)

// TestMain removes buildBinary's directory after the package's tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildBinary compiles tree-ring once per test process, for tests that run
// it as a separate process (concurrency, crashes, hooks through sh -c).
func buildBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		var err error
		if binDir, err = os.MkdirTemp("", "tree-ring-bin-"); err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(binDir, "tree-ring")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// codexConfig is a Codex config.toml for project: project trust when
// trustProject, and the trusted_hash of each hook Tree Ring publishes when
// trustHooks (the two layers Codex 0.169 needs before it runs a hook).
func codexConfig(t *testing.T, project string, trustProject, trustHooks bool) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("model = \"m\"\n")
	if trustProject {
		fmt.Fprintf(&b, "\n[projects.%q]\ntrust_level = \"trusted\"\n", project)
	}
	if trustHooks {
		hashes, err := adapters.CodexHookHashes(filepath.Join(project, ".codex", "hooks.json"), adapters.CodexHooksJSON())
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range sortedKeys(hashes) {
			fmt.Fprintf(&b, "\n[hooks.state.%q]\ntrusted_hash = %q\n", k, hashes[k])
		}
	}
	return b.String()
}

// writeCodexHome writes config as dir/config.toml and returns dir, for
// CODEX_HOME.
func writeCodexHome(t *testing.T, dir, config string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
