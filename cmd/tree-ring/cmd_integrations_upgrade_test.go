package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/activation"
)

// oldBlock is a Codex block as an older definition wrote it into AGENTS.md.
const oldBlock = "<!-- tree-ring:begin codex v1 -->\n## Tree Ring Memory\n\nAn older definition's text.\n<!-- tree-ring:end codex -->\n"

// rustProjectWithOldBlock is the Rust project (a version 3 Codex
// definition) whose AGENTS.md holds an older Codex block between the
// user's own text, recorded in its manifest as Tree Ring's.
func rustProjectWithOldBlock(t *testing.T) *proj {
	t.Helper()
	p := newRustProject(t)
	p.write("AGENTS.md", "# Team notes\n\nOurs.\n\n"+oldBlock+"\nMore of ours.\n")
	m := p.manifest()
	rec := m.Harnesses["codex"]
	rec.ManagedBlocks[0].SHA256 = adapters.SHA256Hex([]byte(oldBlock))
	rec.BridgeFingerprint = adapters.BridgeFingerprint("codex", rec.AdapterVersion, rec.OwnedFiles, rec.ManagedBlocks)
	m.Harnesses["codex"] = rec
	p.write(adapters.ManifestPath, string(m.Encode()))
	// The Rust CLI's guidance is another writer's (issue 24 finding 9):
	// its step, moving it aside for init to install Tree Ring's, is taken
	// first, as TestAdoptRustProject takes it.
	for _, f := range []string{".tree-ring/AGENTS.md", ".tree-ring/SKILL.md", ".tree-ring/CLI.md"} {
		if err := os.Rename(p.path(f), p.path(f+".review")); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// A version 3 definition is rewritten only by reconcile --apply: init and
// a reconcile without --apply change nothing; --apply replaces the owned
// hooks file and rewrites the Tree Ring block inside the user's AGENTS.md
// (each only while it holds the recorded bytes; the user's text around
// the block kept byte for byte), and publishes Codex at the current
// version.
func TestReconcileRewritesAnOlderDefinition(t *testing.T) {
	p := rustProjectWithOldBlock(t)
	p.review("init") // p.run: no pre-existing file changed
	var st initOut
	p.json(&st, "integrations", "status")
	if st.states()["codex"] != "needs-user-review" || !strings.Contains(st.next("codex"), "tree-ring integrations reconcile --apply") {
		t.Fatalf("status after init: %v %s", st.states(), st.next("codex"))
	}
	var plan reconcileOut
	p.json(&plan, "integrations", "reconcile", "--harness", "codex")
	if _, changed, _ := plan.entry(t, "codex"); !slices.Equal(changed, []string{".codex/hooks.json", "AGENTS.md"}) {
		t.Fatalf("plan: %+v", plan)
	}
	r, changed := p.apply("--harness", "codex")
	if r.code != 0 || !slices.Equal(changed, []string{".codex/hooks.json", ".tree-ring/activation.json", "AGENTS.md"}) || !strings.Contains(r.stdout, "replaced: .codex/hooks.json, AGENTS.md") {
		t.Fatalf("apply: %+v %v", r, changed)
	}
	agents := p.read("AGENTS.md")
	if !strings.HasPrefix(agents, "# Team notes\n\nOurs.\n\n<!-- tree-ring:begin codex v1 -->\n") || !strings.HasSuffix(agents, "<!-- tree-ring:end codex -->\n\nMore of ours.\n") ||
		strings.Contains(agents, "An older definition's text.") {
		t.Fatalf("AGENTS.md after the rewrite:\n%s", agents)
	}
	rec := p.manifest().Harnesses["codex"]
	if a, _ := adapters.Lookup("codex"); rec.AdapterVersion != a.Version || rec.State != "configured-awaiting-proof" {
		t.Fatalf("codex record after the rewrite: %+v", rec)
	}
	p.json(&st, "integrations", "status")
	if s := st.states()["codex"]; s != "needs-trust" { // published at the current version; Codex does not trust the project
		t.Fatalf("status after the rewrite: %s: %s", s, st.next("codex"))
	}
	if r, changed := p.apply("--harness", "codex"); r.code != 0 || len(changed) != 0 {
		t.Fatalf("second apply: %+v %v", r, changed)
	}
	p.ok("audit", "verify")
}

// A block the user edited since Tree Ring wrote it is not rewritten: the
// reconcile leaves it, and everything else of the harness, for review.
func TestReconcileLeavesAnEditedOlderBlock(t *testing.T) {
	p := rustProjectWithOldBlock(t)
	p.review("init")
	p.write("AGENTS.md", strings.Replace(p.read("AGENTS.md"), "An older definition's text.", "An older definition's text, edited.", 1))
	r, changed := p.apply()
	if r.code != exitReview || len(changed) != 0 {
		t.Fatalf("apply over an edited block: %+v %v", r, changed)
	}
	var plan reconcileOut
	p.reviewJSON(&plan, "integrations", "reconcile")
	if s, _, next := plan.entry(t, "codex"); s != "needs-user-review" || next == activation.NextStale || !strings.Contains(next, "does not find the bytes it recorded in AGENTS.md (changed since it wrote them") {
		t.Fatalf("codex over an edited block: %s: %s", s, next)
	}
}
