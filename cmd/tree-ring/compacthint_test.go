package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/bolt"
)

// lowerCompactHint sets compactHintAt for one test: making 4 MiB of free
// pages takes an import of thousands of memories.
func lowerCompactHint(t *testing.T, at bolt.CompactThreshold) {
	old := compactHintAt
	compactHintAt = at
	t.Cleanup(func() { compactHintAt = old })
}

// hintLine matches the suggestion, the file named by its base name only.
var hintLine = regexp.MustCompile("^tree-ring: ledger\\.db is [0-9]+\\.[0-9] MiB, [0-9]+\\.[0-9] MiB of it free pages; `tree-ring ledger compact` gives them back and repacks half-empty pages \\(hooks wait while it runs\\)\n$")

// noPath fails when s names a directory of the test's (an absolute path).
func noPath(t *testing.T, s string, dirs ...string) {
	t.Helper()
	for _, d := range append(dirs, os.TempDir()) {
		if strings.Contains(s, d) {
			t.Fatalf("output names %s: %q", d, s)
		}
	}
}

// ledgerSize is ledger.db's size under root.
func ledgerSize(t *testing.T, root string) int64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(root, bolt.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestImportSuggestsCompactWhenFreePagesAreMany(t *testing.T) {
	lowerCompactHint(t, bolt.CompactThreshold{MinFreeBytes: 256 << 10, MinFreeShare: 0.1})
	dir := t.TempDir()
	file := filepath.Join(dir, "in.jsonl")
	writeSizeBenchExport(t, file, 1000) // about 0.8 MiB of free pages
	c := newMemCLI(t)
	r := c.run("", "import", file)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Tree Ring Memory import complete: valid=1000 inserted=1000 ") {
		t.Fatalf("import: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	if !hintLine.MatchString(r.stderr) {
		t.Fatalf("stderr %q: want the one hint line", r.stderr)
	}
	noPath(t, r.stderr, c.root, dir)

	// --json: no line, the numbers in the result.
	j := newMemCLI(t)
	r = j.run("", "--json", "import", file)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("import --json: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	var res struct {
		Inserted         int   `json:"inserted"`
		LedgerBytes      int64 `json:"ledger_bytes"`
		FreeBytes        int64 `json:"free_bytes"`
		CompactSuggested *bool `json:"compact_suggested"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if res.Inserted != 1000 || res.LedgerBytes != ledgerSize(t, j.root) || res.FreeBytes < compactHintAt.MinFreeBytes || res.CompactSuggested == nil || !*res.CompactSuggested {
		t.Fatalf("import --json: %s", r.stdout)
	}

	// `events import` of that ledger's export into a scratch root says the
	// same. It writes up to 10,000 events a transaction, mostly in key order:
	// these leave some 40 KiB free.
	lowerCompactHint(t, bolt.CompactThreshold{MinFreeBytes: 16 << 10, MinFreeShare: 0.01})
	export := filepath.Join(dir, "events.ndjson")
	if err := os.WriteFile(export, []byte(c.ok("events")), 0o600); err != nil {
		t.Fatal(err)
	}
	scratch := filepath.Join(dir, "scratch")
	r = runCLI(t, "", "--root", scratch, "events", "import", export)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "imported ") {
		t.Fatalf("events import: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	if !hintLine.MatchString(r.stderr) {
		t.Fatalf("events import stderr %q: want the one hint line", r.stderr)
	}
	noPath(t, r.stderr, scratch, dir)
	r = runCLI(t, "", "--root", filepath.Join(dir, "scratch2"), "--json", "events", "import", export)
	if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, `"compact_suggested":true}`) {
		t.Fatalf("events import --json: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestSmallImportSuggestsNoCompact(t *testing.T) {
	// The default thresholds: six memories leave a few free pages.
	c := newMemCLI(t)
	r := c.run("", "--json", "import", rustExport)
	if r.code != 0 || r.stderr != "" || !strings.HasSuffix(r.stdout, `,"compact_suggested":false}`+"\n") {
		t.Fatalf("import --json: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	d := newMemCLI(t)
	if r := d.run("", "import", rustExport); r.code != 0 || r.stderr != "" {
		t.Fatalf("import: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	// An import that writes nothing says nothing, even at a zero threshold,
	// and has no size fields.
	lowerCompactHint(t, bolt.CompactThreshold{})
	if r := d.run("", "import", rustExport); r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "inserted=0 ") {
		t.Fatalf("re-import: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	if r := d.run("", "--json", "import", rustExport); r.code != 0 || strings.Contains(r.stdout, "ledger_bytes") {
		t.Fatalf("re-import --json: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	if r := d.run("", "--json", "import", "--dry-run", rustExport); r.code != 0 || strings.Contains(r.stdout, "ledger_bytes") {
		t.Fatalf("dry run --json: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
}
