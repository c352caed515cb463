package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/receipt"
)

// rustFixture is testdata/adopt/rust-project: a project as the Rust Tree
// Ring 0.15 leaves it after init and one Claude Code session (activation
// manifest, Claude Code adapter version 4 bridge, a version 3 Codex hook
// definition, the passive Agent Zero binding, receipts, its guidance files
// and SQLite store), built from the protocol's wire shapes.
const rustFixture = "../../testdata/adopt/rust-project"

const rustStoreID = "5b0c9d3e-7a41-4f2b-9c6d-1e8f2a3b4c5d"

// Receipts of the fixture.
const (
	rustReceiptValid     = "receipt-0b8e6f2a-1c3d-4e5f-8a9b-0c1d2e3f4a5b" // claude-code, an hour old
	rustReceiptExpired   = "receipt-1c9f7a3b-2d4e-4f60-9b0c-1d2e3f4a5b6c" // claude-code, 40 days old
	rustReceiptCodexV3   = "receipt-2da08b4c-3e5f-4071-a0c1-2e3f4a5b6c7d" // codex, adapter version 3
	rustReceiptMalformed = "receipt-3eb19c5d-4f60-4182-b1d2-3f4a5b6c7d8e" // claude-code, truncated
)

// newRustProject lays the fixture out in a new project. The values that
// depend on where the project is and when the test runs are filled in as
// the Rust CLI would have computed them: the project root fingerprint, the
// receipts' recorded_at (an hour and 40 days before the wall clock the
// binary reads), and the Agent Zero binding's digest and bridge
// fingerprint (the binding names the root).
func newRustProject(t *testing.T) *proj {
	t.Helper()
	p := newProj(t)
	now := time.Now().UTC()
	repl := strings.NewReplacer(
		"{{project_root_fingerprint}}", adapters.ProjectRootFingerprint(p.dir),
		"{{recorded_recent}}", receipt.FormatTime(now.Add(-time.Hour)),
		"{{recorded_expired}}", receipt.FormatTime(now.Add(-40*24*time.Hour)),
	)
	files := map[string]string{}
	err := filepath.WalkDir(rustFixture, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(rustFixture, path)
		files[filepath.ToSlash(rel)] = repl.Replace(string(data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	const binding = ".tree-ring/activation/agent-zero.json"
	sum := adapters.SHA256Hex([]byte(files[binding]))
	fp := adapters.BridgeFingerprint("agent-zero", "1", []events.FileDigest{{Path: binding, SHA256: sum}}, nil)
	files[adapters.ManifestPath] = strings.NewReplacer("{{agent_zero_binding_sha256}}", sum, "{{agent_zero_bridge_fingerprint}}", fp).Replace(files[adapters.ManifestPath])
	for rel, data := range files {
		if strings.Contains(data, "{{") {
			t.Fatalf("%s: placeholder left", rel)
		}
		p.write(rel, data)
	}
	return p
}

// A project the Rust Tree Ring initialized goes through status, init,
// status: the store id is kept, no pre-existing file is rewritten or
// removed (p.run hashes every file before and after each command), and
// the states are the protocol's: Claude Code needs-user-review, since its
// skill points agents at the Rust CLI's guidance files, which this store
// did not record (issue 24 finding 9), and its receipt file, although it
// passes the eight rules, is another writer's and never proof here
// (finding 2); the version 3 Codex definition needs-user-review, Agent
// Zero needs-plugin without its plugin's descriptor. Once the guidance is
// moved aside as the step says, init installs Tree Ring's, reconcile
// publishes, and Claude Code's first session here proves it.
const adoptCanary = "CANARY-adopt-7f3e9a-never-in-the-ledger"

func TestAdoptRustProject(t *testing.T) {
	p := newRustProject(t)
	p.write(".tree-ring/memory.sqlite", "SQLite format 3\x00 "+adoptCanary)
	p.write(".tree-ring/AGENTS.md", p.read(".tree-ring/AGENTS.md")+adoptCanary+"\n")
	manifest := p.read(adapters.ManifestPath)
	want := map[string]string{"claude-code": "needs-user-review", "codex": "needs-user-review", "agent-zero": "needs-plugin"}
	moveGuidance := "mv .tree-ring/AGENTS.md .tree-ring/AGENTS.md.review"

	var before initOut
	p.json(&before, "--json", "integrations", "status")
	if before.StoreID != rustStoreID || !mapsEqual(before.states(), want) {
		t.Fatalf("status before init: %+v", before)
	}
	if got := before.next("claude-code"); !strings.Contains(got, moveGuidance) {
		t.Fatalf("claude-code before init: next %q", got)
	}
	if got := before.next("codex"); !strings.Contains(got, moveGuidance) {
		t.Fatalf("codex before init: next %q", got)
	}
	if p.exists(".tree-ring/ledger.db") {
		t.Fatal("status created a ledger")
	}

	var dry struct {
		DryRun       bool `json:"dry_run"`
		Integrations []struct {
			HarnessID    string   `json:"id"`
			State        string   `json:"state"`
			ChangedPaths []string `json:"changed_paths"`
		} `json:"integrations"`
	}
	p.reviewJSON(&dry, "init", "--dry-run")
	got := map[string]string{}
	for _, e := range dry.Integrations {
		got[e.HarnessID] = e.State
		if len(e.ChangedPaths) != 0 {
			t.Errorf("init --dry-run would change %s: %v", e.HarnessID, e.ChangedPaths)
		}
	}
	if !dry.DryRun || !mapsEqual(got, want) || p.exists(".tree-ring/ledger.db") {
		t.Fatalf("init --dry-run: %+v", dry)
	}

	var in initOut
	p.reviewJSON(&in, "init")
	if in.StoreID != rustStoreID || !mapsEqual(in.states(), want) {
		t.Fatalf("init: %+v", in)
	}
	for _, e := range in.Integrations {
		if len(e.ChangedPaths) != 0 {
			t.Errorf("init changed %s: %v", e.ID, e.ChangedPaths)
		}
	}

	var after initOut
	p.json(&after, "--json", "integrations", "status")
	if after.StoreID != rustStoreID || !mapsEqual(after.states(), want) {
		t.Fatalf("status after init: %+v", after)
	}
	if !strings.Contains(after.next("codex"), moveGuidance) || !strings.Contains(after.next("claude-code"), moveGuidance) {
		t.Fatalf("next steps after init: %+v", after)
	}
	if p.read(adapters.ManifestPath) != manifest {
		t.Fatal("activation.json rewritten")
	}

	// The ledger: the adopted store, the manifest's digest, each receipt
	// as evidence or as a file kept untrusted, and the manifest adopted.
	var adopted struct {
		StoreID          string `json:"store_id"`
		ManifestSHA256   string `json:"manifest_sha256"`
		CLIVersion       string `json:"cli_version"`
		ReceiptsFound    int    `json:"receipts_found"`
		ReceiptsVerified int    `json:"receipts_verified"`
	}
	var types []string
	foreign := map[string]string{}
	for _, e := range p.events() {
		types = append(types, e.Stream+" "+e.Type)
		switch e.Type {
		case "store.initialized":
			var s struct {
				StoreID string `json:"store_id"`
			}
			_ = json.Unmarshal(e.Payload, &s)
			if s.StoreID != rustStoreID {
				t.Errorf("store.initialized %s", s.StoreID)
			}
		case "store.adopted":
			if err := json.Unmarshal(e.Payload, &adopted); err != nil {
				t.Fatal(err)
			}
		case "receipt.foreign":
			var f struct {
				ReceiptID string `json:"receipt_id"`
				Reason    string `json:"reason"`
			}
			_ = json.Unmarshal(e.Payload, &f)
			foreign[f.ReceiptID] = f.Reason
		case "receipt.adopted":
			t.Error("receipt.adopted recorded: another writer's receipt is not proof")
		case "manifest.published":
			var m struct {
				SHA256  string `json:"sha256"`
				Adopted bool   `json:"adopted"`
			}
			_ = json.Unmarshal(e.Payload, &m)
			if !m.Adopted || m.SHA256 != adapters.SHA256Hex([]byte(manifest)) {
				t.Errorf("manifest.published %+v", m)
			}
		}
	}
	if adopted.StoreID != rustStoreID || adopted.ManifestSHA256 != adapters.SHA256Hex([]byte(manifest)) ||
		adopted.CLIVersion != "0.15.13" || adopted.ReceiptsFound != 4 || adopted.ReceiptsVerified != 0 {
		t.Fatalf("store.adopted %+v", adopted)
	}
	// The valid receipt is ineligible: its harness awaits the guidance
	// review (it would be other_writer otherwise, never proof either).
	wantForeign := map[string]string{rustReceiptValid: "ineligible", rustReceiptExpired: "rule_8", rustReceiptCodexV3: "ineligible", rustReceiptMalformed: "malformed"}
	if !mapsEqual(foreign, wantForeign) {
		t.Fatalf("receipt.foreign %v", foreign)
	}
	wantTypes := []string{
		"store store.initialized", "store store.adopted",
		"harness/agent-zero bridge.published",
		"harness/claude-code bridge.published", "harness/claude-code publication.review_required",
		"harness/claude-code receipt.foreign", "harness/claude-code receipt.foreign", "harness/claude-code receipt.foreign",
		"harness/codex bridge.published", "harness/codex publication.review_required", "harness/codex receipt.foreign",
		// init makes the store's fleet signing key, records the installed
		// program (the Rust project's, adopted),
		"store store.key_recorded",
		"store program.installed",
		// then init's publication plan after the adoption: first detections,
		// and the manifest on disk found equal to the ledger's.
		"harness/claude-code harness.detected", "harness/codex harness.detected",
		// codex's version 3 definition, reviewed after the guidance.
		"harness/codex publication.review_required",
		"store manifest.published",
	}
	if strings.Join(types, "\n") != strings.Join(wantTypes, "\n") {
		t.Fatalf("events:\n%s", strings.Join(types, "\n"))
	}
	p.ok("audit", "verify")
	// Privacy: the ledger holds neither the project's absolute path nor
	// anything of the files it adopted beyond digests, ids and
	// project-relative paths (the canary sits in the Rust guidance file
	// and store, which nothing must read into an event).
	ledger := p.read(".tree-ring/ledger.db")
	for _, secret := range []string{p.dir, adoptCanary} {
		if strings.Contains(ledger, secret) {
			t.Fatalf("the ledger holds %q", secret)
		}
	}

	// A second init records nothing; a new Claude Code session's preflight
	// proves the harness again, and its retention removes none of the
	// receipt files another writer left (the expired and the malformed one
	// sit in the same worker directory).
	n := len(p.allEvents())
	p.review("init")
	if len(p.allEvents()) != n {
		t.Fatal("a second init appended events")
	}
	dir := receipt.WorkerDir("claude-code", "claude-code")
	// A receipt the Rust binary wrote after the adoption (its hooks may
	// still run it): unknown to the ledger, and kept all the same.
	const later = "receipt-4fc2ad6e-5071-4293-82e3-4a5b6c7d8e9f"
	p.write(dir+"/"+later+".json", p.read(dir+"/"+rustReceiptValid+".json"))
	// The guidance step, as written: move the Rust CLI's guidance aside,
	// init installs and records Tree Ring's, reconcile publishes.
	for _, f := range []string{".tree-ring/AGENTS.md", ".tree-ring/SKILL.md", ".tree-ring/CLI.md"} {
		if err := os.Rename(p.path(f), p.path(f+".review")); err != nil {
			t.Fatal(err)
		}
	}
	p.review("init") // codex's version 3 definition still needs review
	if r, _ := p.apply("--harness", "claude-code"); r.code != 0 {
		t.Fatalf("reconcile --apply: %d %s", r.code, r.stderr)
	}
	cmd := exec.Command(p.bin, "integrations", "preflight", "--harness", "claude-code", "--input-json-stdin", "--context-format", "claude-session-start")
	cmd.Dir, cmd.Env = p.dir, []string{"HOME=" + p.home, "PATH=/usr/bin:/bin"}
	cmd.Stdin = strings.NewReader(`{"session_id":"session-02","cwd":"."}`)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("preflight: %v: %s", err, errb.String())
	}
	var proved initOut
	p.json(&proved, "--json", "integrations", "status")
	if got := proved.states()["claude-code"]; got != "active" {
		t.Fatalf("claude-code after a session here: %s", got)
	}
	for _, id := range []string{rustReceiptValid, rustReceiptExpired, rustReceiptMalformed, later} {
		if !p.exists(dir + "/" + id + ".json") {
			t.Errorf("preflight removed the Rust receipt %s", id)
		}
	}
	if !p.exists(receipt.WorkerDir("codex", "codex") + "/" + rustReceiptCodexV3 + ".json") {
		t.Error("the codex receipt is gone")
	}
	p.ok("audit", "verify")
}

// A manifest that does not decode, or that names another project root, is
// refused by init: no ledger, nothing published, the file kept.
func TestAdoptRefusals(t *testing.T) {
	for name, edit := range map[string]func(string) string{
		"an unknown key": func(m string) string {
			return strings.Replace(m, `"schema_version": 1,`, `"schema_version": 1, "expires_at": "2026-01-01T00:00:00Z",`, 1)
		},
		"another root": func(m string) string {
			var v map[string]any
			_ = json.Unmarshal([]byte(m), &v)
			return strings.Replace(m, v["project_root_fingerprint"].(string), strings.Repeat("0", 64), 1)
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := newRustProject(t)
			m := edit(p.read(adapters.ManifestPath))
			p.write(adapters.ManifestPath, m)
			r := p.run("init")
			if r.code != 2 || !strings.Contains(r.stderr, "cannot adopt .tree-ring/activation.json") || strings.Contains(r.stderr, p.dir) {
				t.Fatalf("init: %+v", r)
			}
			if p.exists(".tree-ring/ledger.db") {
				t.Fatal("init created a ledger under a refused manifest")
			}
			if p.read(adapters.ManifestPath) != m {
				t.Fatal("manifest replaced")
			}
		})
	}
}
