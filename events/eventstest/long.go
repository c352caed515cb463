package eventstest

import (
	"fmt"
	"os"
	"testing"
)

// LongEnv is the repository's one switch for long suites (the whole fault
// matrix): they run only with TREE_RING_LONG=1, so that the default
// `go test ./...` stays short; .ci/acceptance sets it
// (docs/reliability.md, "Long suites").
const LongEnv = "TREE_RING_LONG"

// LongSuites reports whether this run asks for the long suites
// (TREE_RING_LONG=1, exactly). A long test skips, or runs only a sample,
// without it, and says so.
func LongSuites() bool { return os.Getenv(LongEnv) == "1" }

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
