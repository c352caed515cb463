package main

import (
	"bytes"
	"context"
	"fmt"
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

// runCLI runs tree-ring in-process with a fixed clock and id source.
func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	io := IO{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := mainWith(context.Background(), args, io, testDeps())
	return result{code, out.String(), errb.String()}
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
	return deps{
		Now:       now,
		NewID:     eventstest.IDs(0xCC000000 | call&0xFFFFFF),
		Entropy:   eventstest.Entropy(0xCC000000 | call&0xFFFFFF),
		Companion: fleetInProcess(now),
	}
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
	binPath string
	binErr  error
)

// buildBinary compiles tree-ring once per test process, for tests that run
// it as a separate process (concurrency, crashes, hooks through sh -c).
func buildBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tree-ring-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "tree-ring")
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
