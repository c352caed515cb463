package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCertify(t *testing.T) {
	p := newHP(t, ".claude", ".codex")
	p.init()
	if r := p.hook("claude-code", p.payload("claude-code", "session-start.json", nil)); r.code != 0 {
		t.Fatal(r.stderr)
	}
	os.MkdirAll(filepath.Join(p.dir, ".pi"), 0o755) // detected after init: a marker only
	out := filepath.Join(t.TempDir(), "evidence")
	var rep struct {
		OK     bool `json:"ok"`
		Report struct {
			PassCount int `json:"pass_count"`
			FailCount int `json:"fail_count"`
			SkipCount int `json:"skip_count"`
			Records   []struct {
				HarnessID  string   `json:"harness_id"`
				Status     string   `json:"status"`
				Activation string   `json:"activation"`
				Markers    []string `json:"markers"`
				Summary    string   `json:"summary"`
			} `json:"records"`
		} `json:"report"`
	}
	// certify is a gate: a failing harness exits 3 (a failed
	// verification) after the report and the evidence are written.
	r := p.run("", "--json", "integrations", "certify", "--out-dir", out)
	if r.code != 3 || r.stderr != "tree-ring: certification failed for codex, pi (the report above names each next step)\n" {
		t.Fatalf("certify with failing harnesses: exit %d, stderr %q", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.OK {
		t.Fatalf("report %s: %v", r.stdout, err)
	}
	got := map[string]string{}
	for _, r := range rep.Report.Records {
		got[r.HarnessID] = r.Status
	}
	want := map[string]string{"agent-zero": "skip", "claude-code": "pass", "codex": "fail", "pi": "fail"}
	if !mapsEqual(got, want) || rep.Report.PassCount != 1 || rep.Report.FailCount != 2 || rep.Report.SkipCount != 1 {
		t.Fatalf("verdicts %v (%+v)", got, rep.Report)
	}
	var ev struct {
		Status   string `json:"status"`
		Evidence struct {
			Bridge  string `json:"bridge"`
			Receipt *struct {
				ReceiptID   string `json:"receipt_id"`
				RulesPassed int    `json:"rules_passed"`
			} `json:"receipt"`
		} `json:"evidence"`
	}
	b, err := os.ReadFile(filepath.Join(out, "harness", "claude-code.json"))
	if err != nil || json.Unmarshal(b, &ev) != nil || ev.Status != "pass" || ev.Evidence.Receipt == nil || ev.Evidence.Receipt.RulesPassed != 8 || ev.Evidence.Bridge != "match" {
		t.Fatalf("claude evidence: %s %v", b, err)
	}
	b, _ = os.ReadFile(filepath.Join(out, "harness", "pi.json"))
	if !strings.Contains(string(b), "marker only") || !strings.Contains(string(b), `"receipt": null`) {
		t.Errorf("pi evidence: %s", b)
	}
	idx, _ := os.ReadFile(filepath.Join(out, "evidence-index.json"))
	md, _ := os.ReadFile(filepath.Join(out, "harness-activation-summary.md"))
	if !strings.Contains(string(idx), `"harness.claude-code.status": "pass"`) || !strings.Contains(string(md), "| Claude Code | pass | active |") {
		t.Errorf("index %s\nsummary %s", idx, md)
	}
	if ev := p.ok("", "events", "--type", "certification.recorded"); !strings.Contains(ev, `"pass_count":1,"fail_count":2,"skip_count":1`) ||
		!strings.Contains(ev, `"harness_id":"claude-code","status":"pass","state":"active","receipt_id":"receipt-`) {
		t.Errorf("certification event: %s", ev)
	}
	// The default out-dir is inside the store, not a new directory of the
	// project.
	if r := p.run("", "integrations", "certify"); r.code != 3 || !strings.Contains(r.stdout, "evidence="+filepath.Join(".tree-ring", "certification")+"\n") {
		t.Errorf("default out-dir: exit %d\n%s", r.code, r.stdout)
	}
	if _, err := os.Stat(filepath.Join(p.dir, ".tree-ring", "certification", "evidence-index.json")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "target")); !os.IsNotExist(err) {
		t.Errorf("certify made target/ in the project: %v", err)
	}
	p.ok("", "audit", "verify")
}

// firstWrite runs fn once, on the first write to it (a log line), then
// keeps what was written.
type firstWrite struct {
	fn   func()
	done bool
	bytes.Buffer
}

func (w *firstWrite) Write(p []byte) (int, error) {
	if !w.done {
		w.done = true
		w.fn()
	}
	return w.Buffer.Write(p)
}

// TestHookLandsWhileCertifyRuns: certify holds no ledger lock while it
// checks the project's files and writes the evidence (its one write is the
// verdict's transaction at the end). A session-start hook and `runs` that
// run at that point (certify's debug log line announces it) get the lock at
// once: the hook is answered, and its run lands in the ledger before
// certification.recorded, in the same certify run.
func TestHookLandsWhileCertifyRuns(t *testing.T) {
	p := newHP(t, ".claude")
	p.init()
	start := p.payload("claude-code", "session-start.json", nil)
	if r := p.hook("claude-code", start); r.code != 0 {
		t.Fatal(r.stderr)
	}
	hooksBefore := strings.Count(p.ok("", "events", "--type", "run.started"), `"command":"integrations hook"`)
	var during result
	var runsDuring string
	stderr := &firstWrite{fn: func() {
		during = p.hook("claude-code", start)
		runsDuring = p.ok("", "--json", "runs")
	}}
	io := IO{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: stderr, Getenv: func(k string) string { return p.env[k] }}
	code := mainWith(context.Background(), []string{"--root", filepath.Join(p.dir, ".tree-ring"), "--source-root", p.dir,
		"--log-level", "debug", "--lock-timeout", "10s", "integrations", "certify", "--out-dir", t.TempDir()}, io, p.deps())
	if code != 0 {
		t.Fatalf("certify: exit %d: %s", code, stderr.String())
	}
	if !stderr.done {
		t.Fatal("certify logged nothing: the hook never ran during it")
	}
	if during.code != 0 || !strings.Contains(during.stdout, "hookSpecificOutput") {
		t.Fatalf("hook during certify: exit %d: %s %s", during.code, during.stdout, during.stderr)
	}
	if !strings.Contains(runsDuring, `"command":"init","status":"succeeded"`) {
		t.Errorf("runs during certify: %s", runsDuring)
	}
	// In ledger order: the hook's run before the verdict.
	var hooks, hooksAtVerdict int
	for line := range strings.SplitSeq(p.ok("", "events"), "\n") {
		if strings.Contains(line, `"type":"run.started"`) && strings.Contains(line, `"command":"integrations hook"`) {
			hooks++
		}
		if strings.Contains(line, `"type":"certification.recorded"`) {
			hooksAtVerdict = hooks
		}
	}
	if hooksAtVerdict != hooksBefore+1 || hooks != hooksBefore+1 {
		t.Errorf("hook runs: %d before certify, %d at its verdict, %d in all; want the one during certify before the verdict", hooksBefore, hooksAtVerdict, hooks)
	}
	p.ok("", "audit", "verify")
}

// A project whose every harness passes or is skipped passes the gate.
func TestCertifyPassesTheGate(t *testing.T) {
	p := newHP(t, ".claude")
	p.init()
	if r := p.hook("claude-code", p.payload("claude-code", "session-start.json", nil)); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := p.run("", "integrations", "certify")
	if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "fail=0") {
		t.Fatalf("certify: exit %d %q\n%s", r.code, r.stderr, r.stdout)
	}
}
