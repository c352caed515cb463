package eventstest

import (
	"fmt"
	"os"
	"testing"
)

// LongEnv is the repository's one switch for long suites (the fault
// matrix, large ledgers): they run only with TREE_RING_LONG=1, so that the
// default `go test ./...` stays short; .ci/acceptance sets it
// (docs/reliability.md, "Long suites").
const LongEnv = "TREE_RING_LONG"

// LongSuites reports whether this run asks for the long suites
// (TREE_RING_LONG=1), for a test that runs a sample without it.
func LongSuites() bool { return os.Getenv(LongEnv) == "1" }

// Long skips t unless TREE_RING_LONG=1. what says what makes it long.
func Long(t testing.TB, what string) {
	t.Helper()
	if !LongSuites() {
		t.Skipf("%s; %s=1 runs it", what, LongEnv)
	}
}

// Progress reports how far a long suite has got: with -v as a log line of
// t, otherwise on stderr, which go test shows as it comes when it runs in
// the package's directory (in package-list mode it shows a passing
// package's output only with -v).
func Progress(t testing.TB, format string, a ...any) {
	t.Helper()
	if testing.Verbose() {
		t.Logf(format, a...)
		return
	}
	fmt.Fprintf(os.Stderr, "%s: %s\n", t.Name(), fmt.Sprintf(format, a...))
}
