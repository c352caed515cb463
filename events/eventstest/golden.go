package eventstest

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// The repository's one golden-file convention: `go test ./pkg -update`
// rewrites the golden files that pkg's tests compare with Golden. A test
// package that keeps golden files registers the flag once, at package level:
//
//	var _ = eventstest.UpdateFlag()
//
// UpdateFlag is idempotent (a package may also have declared its own
// -update, as fsm's docs test does), so registering never panics.
func UpdateFlag() bool {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files (eventstest.Golden)")
	}
	return true
}

// Updating reports whether this run rewrites golden files.
func Updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// Golden compares got with the golden file at path (relative to the test's
// package directory). Under -update it first writes got there, creating
// the directory.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if Updating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
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
