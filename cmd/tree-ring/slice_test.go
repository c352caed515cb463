package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunsDuringLongImport: while `events import` of a large export runs,
// `runs` gets the ledger (the import releases it between slices) and shows
// the import as running; afterwards it shows it succeeded, and the ledger
// verifies.
func TestRunsDuringLongImport(t *testing.T) {
	if testing.Short() {
		t.Skip("imports 40,000 events")
	}
	dir := t.TempDir()
	root := filepath.Join(dir, ".tree-ring")
	file := filepath.Join(dir, "export.ndjson")
	writeBenchExport(t, file, 40_000)
	done := make(chan result)
	go func() { done <- runCLI(t, "", "--root", root, "events", "import", file) }()
	running, polls := 0, 0
	var imp result
poll:
	for {
		select {
		case imp = <-done:
			break poll
		case <-time.After(20 * time.Millisecond):
		}
		r := runCLI(t, "", "--root", root, "--json", "runs")
		if r.code != 0 {
			if strings.Contains(r.stderr, "no ledger") || strings.Contains(r.stderr, "not found") {
				continue // before the import created the store
			}
			t.Fatalf("runs during the import: exit %d: %s", r.code, r.stderr)
		}
		polls++
		if runsStatus(t, r.stdout, "events import") == "running" {
			running++
		}
	}
	if imp.code != 0 || !strings.HasPrefix(imp.stdout, "imported 40000") {
		t.Fatalf("import: exit %d: %s %s", imp.code, imp.stdout, imp.stderr)
	}
	if running == 0 {
		t.Fatalf("%d polls of runs during the import, none showed it running", polls)
	}
	if got := runsStatus(t, runCLI(t, "", "--root", root, "--json", "runs").stdout, "events import"); got != "succeeded" {
		t.Errorf("after the import, runs shows it %q", got)
	}
	if r := runCLI(t, "", "--root", root, "audit", "verify"); r.code != 0 {
		t.Fatalf("audit verify: %d %s %s", r.code, r.stdout, r.stderr)
	}
	t.Logf("%d polls of runs during the import, %d showed it running", polls, running)
}

// runsStatus is the status of the newest run of command in `runs --json`.
func runsStatus(t *testing.T, out, command string) string {
	t.Helper()
	var v struct {
		Runs []struct {
			Command string `json:"command"`
			Status  string `json:"status"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("runs --json: %v: %s", err, out)
	}
	for _, r := range v.Runs {
		if r.Command == command {
			return r.Status
		}
	}
	return ""
}
