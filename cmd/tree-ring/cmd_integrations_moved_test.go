package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
)

// sessionStart runs the SessionStart command line init wrote into
// .claude/settings.json, from the project, as Claude Code runs it.
func (p *proj) sessionStart() result {
	p.t.Helper()
	var doc struct {
		Hooks map[string][]struct {
			Hooks []struct{ Command string } `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(p.read(".claude/settings.json")), &doc); err != nil || len(doc.Hooks["SessionStart"]) == 0 {
		p.t.Fatalf("settings: %v", err)
	}
	cmd := exec.Command("/bin/sh", "-c", doc.Hooks["SessionStart"][0].Hooks[0].Command)
	cmd.Dir = p.dir
	cmd.Env = []string{"HOME=" + p.home, "PATH=/usr/bin:/bin"}
	cmd.Stdin = strings.NewReader(`{"session_id":"s-moved","hook_event_name":"SessionStart","source":"startup","cwd":` + jsonString(p.dir) + `}`)
	return runCmd(p.t, cmd)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// claudeState is Claude Code's state and next step in `integrations status`.
func (p *proj) claudeState() (string, string) {
	p.t.Helper()
	var st initOut
	p.json(&st, "integrations", "status")
	return st.states()["claude-code"], st.next("claude-code")
}

// provenClaude is a project whose Claude Code is active: init, then one
// session's preflight.
func provenClaude(t *testing.T) *proj {
	t.Helper()
	p := newProj(t, ".claude")
	p.ok("init")
	if r := p.sessionStart(); r.code != 0 {
		t.Fatalf("session at the first root: %+v", r)
	}
	if st, _ := p.claudeState(); st != "active" {
		t.Fatalf("before the move: %s", st)
	}
	return p
}

// A moved project: status is never active at the new root and names
// reconcile; init and the hook change nothing and name it too; reconcile
// shows the change, and with --apply records store.root_moved, replaces
// what names the root (activation.json, the Agent Zero descriptor, each
// while it holds the recorded bytes), moves Claude Code from active back
// to awaiting proof; only a new session there makes it active again.
func TestReconcileMovedProject(t *testing.T) {
	p := provenClaude(t)
	oldFP := adapters.ProjectRootFingerprint(p.dir)
	moved := filepath.Join(filepath.Dir(p.dir), "moved")
	if err := os.Rename(p.dir, moved); err != nil {
		t.Fatal(err)
	}
	p.dir = moved
	newFP := adapters.ProjectRootFingerprint(moved)

	if st, next := p.claudeState(); st != "needs-user-review" || !strings.Contains(next, "`tree-ring integrations reconcile --apply`") {
		t.Fatalf("status at the new root: %s: %s", st, next)
	}
	ledger := p.read(".tree-ring/ledger.db")
	for _, args := range [][]string{{"init"}, {"integrations", "activate", "--harness", "claude-code"}} {
		if r := p.run(args...); r.code != exitReview || !strings.Contains(r.stderr, "reconcile --apply") || strings.Count(r.stderr, "\n") != 1 {
			t.Fatalf("%v at the new root: %+v", args, r)
		}
	}
	if r := p.sessionStart(); r.code == 0 || !strings.Contains(r.stderr, "reconcile --apply") {
		t.Fatalf("session before reconcile: %+v", r)
	}
	if p.read(".tree-ring/ledger.db") != ledger {
		t.Fatal("init, activate or the hook wrote the ledger at the moved root")
	}
	var plan reconcileOut
	p.json(&plan, "integrations", "reconcile")
	if m := plan.Manifest; m == nil || !strings.Contains(m.Diff, "-  \"project_root_fingerprint\": \""+oldFP) || !strings.Contains(m.Diff, "+  \"project_root_fingerprint\": \""+newFP) {
		t.Fatalf("plan: %+v", plan.Manifest)
	}
	// --harness names one; the move plans every recorded harness (Agent
	// Zero's descriptor names the root too).
	r, changed := p.apply("--harness", "claude-code")
	if r.code != 0 || !slices.Equal(changed, []string{".tree-ring/activation.json", ".tree-ring/activation/agent-zero.json"}) ||
		!strings.Contains(r.stdout, "replaced: .tree-ring/activation/agent-zero.json") {
		t.Fatalf("apply: %+v, changed %v", r, changed)
	}
	var mv struct {
		Previous string `json:"previous_project_root_fingerprint"`
		Current  string `json:"project_root_fingerprint"`
	}
	if err := json.Unmarshal(p.lastOf("store.root_moved").Payload, &mv); err != nil || mv.Previous != oldFP || mv.Current != newFP {
		t.Fatalf("store.root_moved %+v %v", mv, err)
	}
	var tail []string
	for _, e := range p.events() {
		if e.Stream == "harness/claude-code" {
			tail = append(tail, e.Type+" "+transitionOf(t, e.Payload))
		}
	}
	if want := []string{"bridge.drift_detected active -> needs-user-review", "bridge.published needs-user-review -> configured-awaiting-proof"}; !slices.Equal(tail[len(tail)-2:], want) {
		t.Fatalf("claude-code after the move: %v", tail)
	}
	if m := p.manifest(); m.ProjectRootFingerprint != newFP || !strings.Contains(p.read(".tree-ring/activation/agent-zero.json"), newFP) {
		t.Fatal("the manifest or the descriptor still names the old root")
	}
	if st, _ := p.claudeState(); st != "configured-awaiting-proof" {
		t.Fatalf("after reconcile, before a session: %s", st)
	}
	p.ok("audit", "verify")
	if r := p.sessionStart(); r.code != 0 {
		t.Fatalf("session after reconcile: %+v", r)
	}
	if st, _ := p.claudeState(); st != "active" {
		t.Fatalf("after a new session: %s", st)
	}
	if r, changed := p.apply(); r.code != 0 || len(changed) != 0 || strings.Contains(r.stdout, "replaced") {
		t.Fatalf("second apply: %+v %v", r, changed)
	}
	// The moved store's export restores into an emptied store at its new
	// root (the root it names last).
	export := filepath.Join(t.TempDir(), "moved.events")
	if err := os.WriteFile(export, []byte(p.ok("events")), 0o600); err != nil {
		t.Fatal(err)
	}
	domain := len(p.events())
	if err := os.RemoveAll(p.path(".tree-ring")); err != nil {
		t.Fatal(err)
	}
	p.ok("events", "import", export)
	// The import's own event: the proof the export brought is revoked
	// (issue 24: a restore proves nothing until a session here).
	if got := p.events(); len(got) != domain+1 || p.lastOf("store.root_moved").Payload == nil || p.lastOf("harness.proof_revoked").Payload == nil {
		t.Fatalf("restored %d domain events, want %d and the revocation", len(got), domain+1)
	}
}

// A copy: the original and the copy both exist. The copy's receipts,
// copied from the original, never count there, before or after its
// reconcile; the original stays active and records nothing of the copy.
func TestCopiedProjectReceiptsDoNotCount(t *testing.T) {
	p := provenClaude(t)
	orig := p.dir
	copyDir := filepath.Join(filepath.Dir(orig), "copy")
	if out, err := exec.Command("cp", "-a", orig, copyDir).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v %s", err, out)
	}
	p.dir = copyDir
	receipts, _ := filepath.Glob(filepath.Join(copyDir, ".tree-ring", "activation", "receipts", "*", "*"))
	if len(receipts) == 0 {
		t.Fatal("the copy holds no receipt file of the original")
	}
	if st, _ := p.claudeState(); st != "needs-user-review" {
		t.Fatalf("the copy before reconcile: %s", st)
	}
	if r, _ := p.apply(); r.code != 0 {
		t.Fatalf("apply at the copy: %+v", r)
	}
	if st, _ := p.claudeState(); st != "configured-awaiting-proof" {
		t.Fatalf("the copy's copied receipts count there: %s", st)
	}
	p.dir = orig
	if st, _ := p.claudeState(); st != "active" {
		t.Fatalf("the original after the copy's reconcile: %s", st)
	}
	for _, e := range p.events() {
		if e.Type == "store.root_moved" {
			t.Fatal("the original recorded the copy's move")
		}
	}
}

// transitionOf is a harness payload's "from -> to".
func transitionOf(t *testing.T, payload json.RawMessage) string {
	t.Helper()
	var tr struct{ From, To string }
	if err := json.Unmarshal(payload, &tr); err != nil {
		t.Fatal(err)
	}
	return tr.From + " -> " + tr.To
}
