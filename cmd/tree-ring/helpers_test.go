package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// fixedClock starts at a fixed instant and advances one second per call.
func fixedClock(start time.Time) func() time.Time {
	t := start
	return func() time.Time { t = t.Add(time.Second); return t }
}

// seqIDs mints deterministic ULIDs from the clock's instant and a counter.
func seqIDs(now func() time.Time) func() ulid.ULID {
	var n uint64
	return func() ulid.ULID {
		n++
		var id ulid.ULID
		_ = id.SetTime(ulid.Timestamp(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)))
		copy(id[6:], []byte{0, 0, 0, 0, 0, 0, 0, 0, byte(n >> 8), byte(n)})
		return id
	}
}

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

func testDeps() deps {
	now := fixedClock(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	return deps{Now: now, NewID: seqIDs(now)}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden %s (run with -update): %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden (run with -update to accept):\n got: %s\nwant: %s", path, got, want)
	}
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
