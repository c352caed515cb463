package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters/activation"
	"github.com/tree-ring/tree-ring/events/receipt"
)

// claudeSession runs the Claude Code SessionStart preflight in p, as its
// hook does.
func (p *proj) claudeSession(session string) {
	p.t.Helper()
	cmd := exec.Command(p.bin, "integrations", "preflight", "--harness", "claude-code", "--input-json-stdin", "--context-format", "claude-session-start")
	cmd.Dir, cmd.Env = p.dir, []string{"HOME=" + p.home, "PATH=/usr/bin:/bin"}
	cmd.Stdin = strings.NewReader(`{"session_id":"` + session + `","cwd":"."}`)
	if out, err := cmd.CombinedOutput(); err != nil {
		p.t.Fatalf("preflight: %v: %s", err, out)
	}
}

// Issue 24 finding 2, end to end: an attacker runs init and one session
// at the victim's predictable path, then ships .tree-ring without its
// ledger and key; the clone also carries a forged receipt file with a
// fresh recorded_at. On the victim's machine, where no session ran, status
// is configured-awaiting-proof before and after init (which records every
// receipt file as receipt.foreign, other_writer), a forged file dropped in
// after init proves nothing either, and the victim's own first session
// makes it active. init and status change no pre-existing file (p.run
// hashes every one before and after).
func TestClonedReceiptsAreNotProof(t *testing.T) {
	p := newProj(t, ".claude")
	p.ok("init")
	p.claudeSession("attacker-01")
	var st initOut
	p.json(&st, "--json", "integrations", "status")
	if st.states()["claude-code"] != "active" {
		t.Fatalf("the attacker's own session: %+v", st)
	}
	// What the clone ships: everything but the ledger and the private key
	// (neither is committed).
	for _, f := range []string{".tree-ring/ledger.db", ".tree-ring/store.key"} {
		if err := os.Remove(p.path(f)); err != nil {
			t.Fatal(err)
		}
	}
	dir := receipt.WorkerDir("claude-code", "claude-code")
	names, err := filepath.Glob(p.path(dir + "/receipt-*.json"))
	if err != nil || len(names) != 1 {
		t.Fatalf("receipts %v %v", names, err)
	}
	real := strings.TrimSuffix(filepath.Base(names[0]), ".json")
	const forged = "receipt-5ad3be7f-6182-44a4-93fa-5b6c7d8e9fa0"
	p.write(dir+"/"+forged+".json", strings.ReplaceAll(p.read(dir+"/"+real+".json"), real, forged))

	var before initOut
	p.json(&before, "--json", "integrations", "status", "--verbose")
	if before.states()["claude-code"] != "configured-awaiting-proof" || before.next("claude-code") != activation.NextAdopt {
		t.Fatalf("status before init: %+v", before)
	}
	if out := p.ok("integrations", "status", "--verbose"); strings.Contains(out, "receipt-age-seconds") {
		t.Fatalf("status before init cites a receipt:\n%s", out)
	}
	if p.exists(".tree-ring/ledger.db") {
		t.Fatal("status created a ledger")
	}

	var in initOut
	p.json(&in, "--json", "init")
	var after initOut
	p.json(&after, "--json", "integrations", "status")
	if in.states()["claude-code"] != "configured-awaiting-proof" || after.states()["claude-code"] != "configured-awaiting-proof" ||
		after.next("claude-code") != activation.NextNotProof("Claude Code") {
		t.Fatalf("init %+v\nstatus after init %+v", in, after)
	}
	foreign := map[string]string{}
	for _, e := range p.events() {
		switch e.Type {
		case "receipt.adopted", "preflight.succeeded", "receipt.recorded":
			t.Errorf("the clone's receipts became %s", e.Type)
		case "receipt.foreign":
			var f struct {
				ReceiptID string `json:"receipt_id"`
				Reason    string `json:"reason"`
			}
			if err := json.Unmarshal(e.Payload, &f); err != nil {
				t.Fatal(err)
			}
			foreign[f.ReceiptID] = f.Reason
		}
	}
	if !mapsEqual(foreign, map[string]string{real: "other_writer", forged: "other_writer"}) {
		t.Fatalf("receipt.foreign %v", foreign)
	}

	p.ok("audit", "verify")

	// A forged file after init: the ledger never recorded it.
	const late = "receipt-6be4cf80-7293-45b5-a40b-6c7d8e9fa0b1"
	p.write(dir+"/"+late+".json", strings.ReplaceAll(p.read(dir+"/"+real+".json"), real, late))
	if got, _ := p.claudeState(); got != "configured-awaiting-proof" {
		t.Fatalf("a receipt file forged after init: %s", got)
	}

	p.claudeSession("victim-01")
	if got, _ := p.claudeState(); got != "active" {
		t.Fatalf("the victim's own session: %s", got)
	}
}

// The restore case of issue 24 finding 2: this store's own export,
// imported into an empty .tree-ring on another machine (here: the same
// path, its .tree-ring emptied), re-materializes
// the receipt files, which then prove nothing there: status is
// configured-awaiting-proof with the step that says why, while the replay
// at the original session's instant still shows what that machine
// proved; the next session here proves it.
func TestRestoredReceiptsAreNotProof(t *testing.T) {
	p := newProj(t, ".claude")
	p.ok("init")
	p.claudeSession("original-01")
	export := filepath.Join(t.TempDir(), "store.events")
	if err := os.WriteFile(export, []byte(p.ok("events")), 0o600); err != nil {
		t.Fatal(err)
	}
	var proved struct {
		Harnesses []struct {
			State string `json:"state"`
		} `json:"harnesses"`
	}
	at := p.lastEventTime()
	// The documented restore: the latest export into an empty .tree-ring
	// (with the store's key, which the backup keeps beside the export),
	// then init (which finds the store and installs its files again).
	key := p.read(".tree-ring/store.key")
	if err := os.RemoveAll(p.path(".tree-ring")); err != nil {
		t.Fatal(err)
	}
	p.ok("events", "import", export)
	if err := os.WriteFile(p.path(".tree-ring/store.key"), []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	// (Agent Zero's binding file was under the emptied .tree-ring: init
	// leaves it to review, exit 5.)
	if r := p.run("init"); r.code != 0 && r.code != exitReview {
		t.Fatalf("init after the restore: %+v", r)
	}
	dir := receipt.WorkerDir("claude-code", "claude-code")
	if names, _ := filepath.Glob(p.path(dir + "/receipt-*.json")); len(names) != 1 {
		t.Fatalf("the restore re-materialized %v", names)
	}
	var st initOut
	p.json(&st, "--json", "integrations", "status")
	if st.states()["claude-code"] != "configured-awaiting-proof" || st.next("claude-code") != activation.NextNotProof("Claude Code") {
		t.Fatalf("status after the restore: %+v", st)
	}
	p.json(&proved, "--json", "audit", "replay", "--harness", "claude-code", "--at", at)
	if len(proved.Harnesses) != 1 || proved.Harnesses[0].State != "active" {
		t.Fatalf("replay at the original session: %+v", proved)
	}
	p.claudeSession("restored-01")
	if got, _ := p.claudeState(); got != "active" {
		t.Fatalf("a session after the restore: %s", got)
	}
}

// lastEventTime is the recorded_at of the ledger's newest event.
func (p *proj) lastEventTime() string {
	p.t.Helper()
	lines := strings.Split(strings.TrimSpace(p.ok("events")), "\n")
	var e struct {
		RecordedAt string `json:"recorded_at"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &e); err != nil {
		p.t.Fatal(err)
	}
	return e.RecordedAt
}
