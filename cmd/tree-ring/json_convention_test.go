package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// jsonExempt are the commands whose --json output is not the convention's
// (docs/json.md), each with why.
var jsonExempt = map[string]string{
	"events":                 "NDJSON: one published envelope per line",
	"export":                 "the published JSONL export format",
	"integrations hook":      "the host's hook output, fixed by each harness",
	"integrations preflight": "the protocol's preflight response",
	"completion":             "a shell script",
	"demo":                   "a throwaway project's walkthrough, human output only",
	"fleet publish":          "the companion program's output (docs/fleet.md)",
	"fleet collect":          "the companion program's output (docs/fleet.md)",
	"fleet verify":           "needs replicas that fleet collect wrote (cmd_fleet_*_test.go run it)",
	"fleet report":           "needs replicas that fleet collect wrote (cmd_fleet_*_test.go run it)",
}

// Issue 26 item 7: every command's --json output is one top-level JSON
// object on stdout (docs/json.md), and no command is left out.
func TestEveryJSONOutputIsOneObject(t *testing.T) {
	p := newHP(t, ".claude", ".git")
	p.init()
	id := strings.TrimSpace(p.ok("", "remember", "Always run go vet before committing", "--event-type", "preference"))
	export := filepath.Join(t.TempDir(), "export.jsonl")
	p.ok("", "export", "--output", export)
	envs := filepath.Join(t.TempDir(), "events.ndjson")
	if err := os.WriteFile(envs, []byte(p.ok("", "events")), 0o600); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(t.TempDir(), "report.html")
	runs := map[string][]string{
		"audit duplicates":        {"audit", "duplicates"},
		"audit graph":             {"audit", "graph"},
		"audit replay":            {"audit", "replay"},
		"audit report":            {"audit", "report", "--html", html},
		"audit runs":              {"audit", "runs"},
		"audit verify":            {"audit", "verify"},
		"capture":                 {"capture", "Run the linter before every push", "--event-type", "lesson", "--agent-profile", "a", "--workflow-id", "w", "--session-id", "s", "--operation-id", "auto-c-1", "--source-ref", "agent-checkpoint:c"},
		"events import":           {"events", "import", envs},
		"fleet identity":          {"fleet", "identity"},
		"fleet label":             {"fleet", "label", "host-a"},
		"fleet rotate-key":        {"fleet", "rotate-key"},
		"fleet status":            {"fleet", "status", "--from", t.TempDir()},
		"forget":                  {"forget", id, "--reason", "test"},
		"import":                  {"import", export},
		"init":                    {"init"},
		"integrations activate":   {"integrations", "activate", "--harness", "claude-code", "--dry-run"},
		"integrations certify":    {"integrations", "certify"},
		"integrations deactivate": {"integrations", "deactivate", "--harness", "claude-code", "--dry-run"},
		"integrations link":       {"integrations", "link", "--harness", "claude-code", "--dry-run"},
		"integrations reconcile":  {"integrations", "reconcile"},
		"integrations scan":       {"integrations", "scan"},
		"integrations status":     {"integrations", "status"},
		"ledger compact":          {"ledger", "compact"},
		"projections rebuild":     {"projections", "rebuild"},
		"recall":                  {"recall", "vet"},
		"remember":                {"remember", "Prefer table tests", "--event-type", "preference"},
		"runs":                    {"runs"},
		"version":                 {"version"},
	}
	for name := range commands {
		args, ok := runs[name]
		if _, exempt := jsonExempt[name]; exempt == ok {
			t.Errorf("%s: add it to runs or, with a reason, to jsonExempt", name)
			continue
		}
		if !ok {
			continue
		}
		r := p.run("", append([]string{"--json"}, args...)...)
		if r.code != 0 && r.code != exitReview && r.code != exitVerify {
			t.Errorf("%s: %+v", name, r)
			continue
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(r.stdout)))
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Errorf("%s --json: %v: %q", name, err, r.stdout)
			continue
		}
		if _, obj := v.(map[string]any); !obj || dec.More() {
			t.Errorf("%s --json is not one top-level object: %q", name, r.stdout)
		}
	}
}

// Issue 26 item 7: init --dry-run names its entries' fields as init does
// (id, not harness_id), so one reader reads both.
func TestInitDryRunNamesAsInit(t *testing.T) {
	p := newHP(t, ".claude")
	keys := func(args ...string) map[string]bool {
		var out struct {
			Integrations []map[string]any `json:"integrations"`
		}
		if err := json.Unmarshal([]byte(p.ok("", append([]string{"--json"}, args...)...)), &out); err != nil || len(out.Integrations) == 0 {
			t.Fatalf("%v: %v", args, err)
		}
		k := map[string]bool{}
		for name := range out.Integrations[0] {
			k[name] = true
		}
		delete(k, "managed_paths") // only where a harness has them
		return k
	}
	dry := keys("init", "--dry-run")
	real := keys("init")
	if !dry["id"] || dry["harness_id"] || len(dry) != len(real) {
		t.Fatalf("init --dry-run entry keys %v, init's %v", dry, real)
	}
	for k := range real {
		if !dry[k] {
			t.Errorf("init --dry-run lacks %s", k)
		}
	}
}
