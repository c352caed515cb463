package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
)

// apply runs `integrations reconcile --apply` (the one command that may
// replace or remove Tree Ring's own files) and returns its result and the
// pre-existing paths it changed or removed.
func (p *proj) apply(args ...string) (result, []string) {
	p.t.Helper()
	before := hashTree(p.t, p.dir)
	cmd := exec.Command(p.bin, append([]string{"integrations", "reconcile", "--apply"}, args...)...)
	cmd.Dir = p.dir
	cmd.Env = []string{"HOME=" + p.home, "PATH=/usr/bin:/bin"}
	r := runCmd(p.t, cmd)
	after := hashTree(p.t, p.dir)
	var changed []string
	for rel, h := range before {
		if after[rel] != h && rel != filepath.Join(".tree-ring", "ledger.db") {
			changed = append(changed, filepath.ToSlash(rel))
		}
	}
	sort.Strings(changed)
	return r, changed
}

// applyJSON is apply with --json, decoding the report into v; the command
// must exit 0.
func (p *proj) applyJSON(v any, args ...string) []string {
	p.t.Helper()
	r, changed := p.apply(append([]string{"--json"}, args...)...)
	if r.code != 0 {
		p.t.Fatalf("reconcile --apply %v: exit %d, stderr %s", args, r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		p.t.Fatalf("%v: %v\n%s", args, err, r.stdout)
	}
	return changed
}

// reviewedToPublished is manifest with the one planned record's state
// (needs-user-review) as publication records it: all a reconcile after a
// hand merge changes there.
func reviewedToPublished(manifest string) string {
	return strings.Replace(manifest, `"state": "needs-user-review"`, `"state": "configured-awaiting-proof"`, 1)
}

type reconcileOut struct {
	DryRun       bool `json:"dry_run"`
	Integrations []struct {
		HarnessID    string   `json:"harness_id"`
		State        string   `json:"state"`
		ChangedPaths []string `json:"changed_paths"`
		NextStep     string   `json:"next_step"`
	} `json:"integrations"`
	Manifest *struct {
		PreviousSHA256 string   `json:"previous_sha256"`
		SHA256         string   `json:"sha256"`
		Changed        []string `json:"changed"`
		Diff           string   `json:"diff"`
	} `json:"manifest"`
}

func (r reconcileOut) entry(t *testing.T, id string) (state string, changed []string, next string) {
	t.Helper()
	for _, e := range r.Integrations {
		if e.HarnessID == id {
			return e.State, e.ChangedPaths, e.NextStep
		}
	}
	t.Fatalf("no %s in %+v", id, r)
	return "", nil, ""
}

func (p *proj) lastOf(typ string) evt {
	p.t.Helper()
	evs := p.events()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == typ {
			return evs[i]
		}
	}
	p.t.Fatalf("no %s event", typ)
	return evt{}
}

// A harness added after init: init stays create-only and names reconcile
// (not "move it aside"); reconcile shows the manifest change and writes
// nothing; --apply creates the bridge, replaces the manifest and records
// the previous digest.
func TestReconcileHarnessAddedAfterInit(t *testing.T) {
	p := newProj(t, ".claude")
	p.ok("init")
	oldManifest := p.read(".tree-ring/activation.json")
	p.write(".codex/.keep", "")
	var out initOut
	p.reviewJSON(&out, "init")
	next := ""
	for _, e := range out.Integrations {
		if e.ID == "codex" {
			next = e.NextStep
		}
	}
	if out.states()["codex"] != "needs-user-review" || strings.Contains(next, "move it aside") || !strings.Contains(next, "tree-ring integrations reconcile --harness codex") {
		t.Fatalf("init after adding .codex: %v\n%s", out.states(), next)
	}
	ledger := p.read(".tree-ring/ledger.db")
	var plan reconcileOut
	p.json(&plan, "integrations", "reconcile") // p.json checks every file is unchanged
	if p.read(".tree-ring/ledger.db") != ledger || p.exists(".codex/hooks.json") {
		t.Fatal("reconcile without --apply changed something")
	}
	if st, created, _ := plan.entry(t, "codex"); !plan.DryRun || st != "configured-awaiting-proof" || !slices.Contains(created, ".codex/hooks.json") {
		t.Fatalf("plan: %+v", plan)
	}
	if m := plan.Manifest; m == nil || !slices.Equal(m.Changed, []string{"codex"}) || m.PreviousSHA256 != adapters.SHA256Hex([]byte(oldManifest)) ||
		!strings.Contains(m.Diff, "\n+    \"codex\": {\n") || strings.Contains(m.Diff, "\n-") {
		t.Fatalf("manifest change: %+v", plan.Manifest)
	}
	r, changed := p.apply()
	if r.code != 0 || !slices.Equal(changed, []string{".tree-ring/activation.json"}) || !strings.Contains(r.stdout, "replaced .tree-ring/activation.json") {
		t.Fatalf("apply: %+v, changed %v", r, changed)
	}
	if !p.exists(".codex/hooks.json") {
		t.Fatal("the codex bridge was not created")
	}
	var rec struct{ PreviousSHA256, SHA256 string }
	if err := json.Unmarshal(p.lastOf("manifest.reconciled").Payload, &struct {
		P *string `json:"previous_sha256"`
		S *string `json:"sha256"`
	}{&rec.PreviousSHA256, &rec.SHA256}); err != nil {
		t.Fatal(err)
	}
	if rec.PreviousSHA256 != adapters.SHA256Hex([]byte(oldManifest)) || rec.SHA256 != adapters.SHA256Hex([]byte(p.read(".tree-ring/activation.json"))) {
		t.Fatalf("manifest.reconciled %+v", rec)
	}
	if _, ok := p.manifest().Harnesses["codex"]; !ok {
		t.Fatal("no codex record in the replaced manifest")
	}
	var st initOut
	var dry initOut // init --dry-run's entries name their fields as init's
	p.json(&st, "integrations", "status")
	p.json(&dry, "init", "--dry-run")
	if ds := dry.states()["codex"]; st.states()["codex"] != "needs-trust" || ds != "needs-trust" {
		t.Fatalf("after reconcile: status %v, init --dry-run %+v", st.states(), dry)
	}
	// Nothing left to reconcile: a second apply changes nothing.
	if r, changed := p.apply(); r.code != 0 || len(changed) != 0 || strings.Contains(r.stdout, "replaced") {
		t.Fatalf("second apply: %+v %v", r, changed)
	}
}

// A deactivation finishes: once the user removed what is theirs to remove,
// reconcile --apply removes the files Tree Ring created (only while they
// hold the recorded bytes), records harness.deactivated and drops the
// record from the manifest; status and init --dry-run then agree.
func TestReconcileFinishesDeactivation(t *testing.T) {
	p := newProj(t, ".codex")
	p.ok("init")
	p.ok("integrations", "deactivate", "--harness", "codex")
	// The block in AGENTS.md is the user's to remove (here the whole file,
	// which only held it); an edited owned file is theirs too.
	if err := os.Remove(p.path("AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	hooks := p.read(".codex/hooks.json")
	p.write(".codex/hooks.json", hooks+" ")
	r, changed := p.apply("--harness", "codex")
	if r.code != exitReview || len(changed) != 0 || !strings.Contains(r.stdout, "not Tree Ring's to remove (your file, or one you changed): .codex/hooks.json") {
		t.Fatalf("apply with an edited owned file: %+v %v", r, changed)
	}
	p.write(".codex/hooks.json", hooks)
	var rep activateOut
	p.json(&rep, "integrations", "deactivate", "--harness", "codex")
	if strings.Contains(rep.NextStep, "AGENTS.md") || !strings.Contains(rep.NextStep, "reconcile --harness codex --apply") {
		t.Fatalf("deactivate again names what is gone: %s", rep.NextStep)
	}
	var plan reconcileOut
	p.json(&plan, "integrations", "reconcile", "--harness", "codex")
	if st, removes, _ := plan.entry(t, "codex"); st != "unsupported" || !slices.Equal(removes, []string{".agents/skills/tree-ring-memory/SKILL.md", ".codex/hooks.json"}) ||
		plan.Manifest == nil || !strings.Contains(plan.Manifest.Diff, "\n-    \"codex\": {\n") {
		t.Fatalf("plan: %+v", plan)
	}
	r, changed = p.apply("--harness", "codex")
	want := []string{".agents/skills/tree-ring-memory/SKILL.md", ".codex/hooks.json", ".tree-ring/activation.json"}
	if r.code != 0 || !slices.Equal(changed, want) || p.exists(".codex/hooks.json") || !p.exists(".tree-ring/activation.json") {
		t.Fatalf("apply: %+v, changed %v", r, changed)
	}
	if e := p.lastOf("harness.deactivated"); !bytes.Contains(e.Payload, []byte(`"from":"needs-user-review","to":"unsupported"`)) {
		t.Fatalf("harness.deactivated %s", e.Payload)
	}
	if _, ok := p.manifest().Harnesses["codex"]; ok {
		t.Fatal("the manifest still holds the codex record")
	}
	var st initOut
	var dry initOut // init --dry-run's entries name their fields as init's
	p.json(&st, "integrations", "status")
	p.json(&dry, "init", "--dry-run")
	if ds := dry.states()["codex"]; st.states()["codex"] != "unsupported" || ds != "unsupported" {
		t.Fatalf("status %v, init --dry-run %+v", st.states(), dry)
	}
	n := len(p.events())
	p.ok("init")
	p.json(&rep, "integrations", "deactivate", "--harness", "codex")
	if len(p.events()) != n || p.exists(".codex/hooks.json") || !strings.Contains(rep.NextStep, "Nothing to deactivate") {
		t.Fatalf("after the deactivation: %d events (had %d), %+v", len(p.events()), n, rep)
	}
	// Activating again starts over; the manifest takes the record through
	// reconcile.
	var act activateOut
	p.reviewJSON(&act, "integrations", "activate", "--harness", "codex")
	if r, _ := p.apply("--harness", "codex"); r.code != 0 {
		t.Fatalf("reconcile after activate: %+v", r)
	}
	if _, ok := p.manifest().Harnesses["codex"]; !ok || !p.exists(".codex/hooks.json") {
		t.Fatal("codex was not published again")
	}
}
