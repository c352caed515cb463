package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/events/receipt"
)

// e2e is a project driven only through the built binary and the exact
// command lines init writes into the harnesses' hook files, run with sh -c
// from a nested directory and PATH=/usr/bin:/bin, as a harness runs them.
// The project path contains a space; the project is a git repository when
// git is installed (the command line falls back to pwd otherwise).
type e2e struct {
	*hp
	bin string
}

func newE2E(t *testing.T, markers ...string) *e2e {
	t.Helper()
	p := &e2e{hp: newHP(t, markers...), bin: buildBinary(t)}
	// The real binary is installed by init, not the stub.
	if err := os.RemoveAll(filepath.Join(p.dir, ".tree-ring")); err != nil {
		t.Fatal(err)
	}
	for _, git := range []string{"/usr/bin/git", "/bin/git"} {
		if _, err := os.Stat(git); err == nil {
			if out, err := exec.Command(git, "init", "-q", p.dir).CombinedOutput(); err != nil {
				t.Fatalf("git init: %v %s", err, out)
			}
			break
		}
	}
	if r := p.exec(p.dir, "", p.bin, "init"); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	return p
}

func (p *e2e) exec(dir, stdin string, name string, args ...string) result {
	p.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + p.home}
	for k, v := range p.env {
		if k != "HOME" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Stdin = strings.NewReader(stdin)
	return runCmd(p.t, cmd)
}

// cli runs the binary from the project root.
func (p *e2e) cli(args ...string) string {
	p.t.Helper()
	r := p.exec(p.dir, "", p.bin, args...)
	if r.code != 0 {
		p.t.Fatalf("%v: %s", args, r.stderr)
	}
	return r.stdout
}

// command is the exact hook command line init wrote for harness and event.
func (p *e2e) command(harness, event string) string {
	p.t.Helper()
	file := map[string]string{"claude-code": ".claude/settings.json", "codex": ".codex/hooks.json", "gemini-cli": ".gemini/settings.json"}[harness]
	var doc struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	b, err := os.ReadFile(filepath.Join(p.dir, file))
	if err != nil || json.Unmarshal(b, &doc) != nil {
		p.t.Fatalf("read %s: %v", file, err)
	}
	for _, g := range doc.Hooks[event] {
		for _, h := range g.Hooks {
			if strings.Contains(h.Command, "--harness "+harness) {
				return h.Command
			}
		}
	}
	p.t.Fatalf("%s has no %s command for %s", file, event, harness)
	return ""
}

// fire runs the installed command line for the payload's event.
func (p *e2e) fire(harness, stdin string) result {
	p.t.Helper()
	var m struct {
		Event string `json:"hook_event_name"`
	}
	if err := json.Unmarshal([]byte(stdin), &m); err != nil {
		p.t.Fatal(err)
	}
	return p.exec(p.cwd, stdin, "/bin/sh", "-c", p.command(harness, m.Event))
}

func (p *e2e) statusOf(id string) map[string]any {
	p.t.Helper()
	var s statusOut
	if err := json.Unmarshal([]byte(p.cli("--json", "integrations", "status")), &s); err != nil {
		p.t.Fatal(err)
	}
	for _, raw := range s.Integrations {
		var m map[string]any
		json.Unmarshal(raw, &m)
		if m["id"] == id {
			return m
		}
	}
	p.t.Fatalf("status lists no %s", id)
	return nil
}

func contextOf(t *testing.T, r result) string {
	t.Helper()
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("hook: exit %d: %s", r.code, r.stderr)
	}
	out := oneObject(t, r.stdout)
	hso, ok := out["hookSpecificOutput"].(map[string]any)
	if !ok || len(out) != 1 || len(hso) != 2 {
		t.Fatalf("hook output %s", r.stdout)
	}
	return hso["additionalContext"].(string)
}

func TestHookEndToEnd(t *testing.T) {
	p := newE2E(t, ".claude", ".codex")
	// Claude Code session start: one object, a receipt, status active.
	ctx := contextOf(t, p.fire("claude-code", p.payload("claude-code", "session-start.json", nil)))
	if !strings.Contains(ctx, "No safe memories matched") {
		t.Fatalf("first context %q", ctx)
	}
	if rs := p.receipts(); len(rs) != 1 || p.statusOf("claude-code")["state"] != "active" {
		t.Fatalf("receipts %v, status %v", rs, p.statusOf("claude-code"))
	}
	// A subagent is a distinct worker.
	contextOf(t, p.fire("claude-code", p.payload("claude-code", "subagent-start.json", nil)))
	rs := p.receipts()
	if len(rs) != 2 || filepath.Dir(rs[0]) == filepath.Dir(rs[1]) || p.receipt(rs[0]).WorkerKeyFingerprint == p.receipt(rs[1]).WorkerKeyFingerprint {
		t.Fatalf("subagent receipts %v", rs)
	}
	// Stop: the checkpoint; its first capture line, filled in, run twice
	// from the nested directory, creates one memory.
	r := p.fire("claude-code", p.payload("claude-code", "stop.json", nil))
	out := oneObject(t, r.stdout)
	if r.code != 0 || out["decision"] != "block" {
		t.Fatalf("stop: %d %s %s", r.code, r.stdout, r.stderr)
	}
	var line string
	for _, l := range strings.Split(out["reason"].(string), "\n") {
		if strings.Contains(l, "--operation-id auto-") && strings.HasSuffix(strings.Fields(l)[len(strings.Fields(l))-3], "-1") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no first capture line in %s", out["reason"])
	}
	const summary = "Prefer table-driven tests in this repository"
	line = preflight.FillCapture(line, summary, "preference", "cambium")
	for i := 0; i < 2; i++ {
		if r := p.exec(p.cwd, "", "/bin/sh", "-c", line); r.code != 0 {
			t.Fatalf("capture %d: %s", i, r.stderr)
		}
	}
	if n := strings.Count(p.cli("events", "--type", "memory.captured"), "\n"); n != 1 {
		t.Fatalf("%d memories captured, want 1", n)
	}
	if r := p.fire("claude-code", p.payload("claude-code", "stop-active.json", nil)); r.code != 0 || r.stdout != "{}\n" {
		t.Fatalf("stop_hook_active: %q %s", r.stdout, r.stderr)
	}
	// A new Claude session sees the memory; a Codex session does not (it is
	// claude-code's agent-scoped memory).
	next := contextOf(t, p.fire("claude-code", p.payload("claude-code", "session-start.json", func(m map[string]any) { m["session_id"] = "def789" })))
	if !strings.Contains(next, summary) {
		t.Fatalf("the new session's context lacks the memory:\n%s", next)
	}
	codex := contextOf(t, p.fire("codex", p.payload("codex", "session-start.json", nil)))
	if strings.Contains(codex, summary) {
		t.Fatal("codex sees claude-code's agent-scoped memory")
	}
	// Two codex workers: distinct worker keys, one store.
	for _, id := range []string{"child-1", "child-2"} {
		contextOf(t, p.fire("codex", p.payload("codex", "subagent-start.json", func(m map[string]any) { m["agent_id"] = id })))
	}
	workers, stores := map[string]bool{}, map[string]bool{}
	for _, r := range p.receipts() {
		if rc := p.receipt(r); strings.HasPrefix(rc.Session.AgentProfile, "codex:") {
			workers[rc.WorkerKeyFingerprint], stores[rc.StoreID] = true, true
		}
	}
	if len(workers) != 2 || len(stores) != 1 {
		t.Fatalf("codex workers %v stores %v", workers, stores)
	}
	p.cli("audit", "verify")
	if s := p.statusOf("codex"); s["state"] != "active" {
		t.Fatalf("codex %v", s)
	}

	// A tampered .codex/hooks.json: needs-user-review although receipts exist.
	hooks := filepath.Join(p.dir, ".codex", "hooks.json")
	b, _ := os.ReadFile(hooks)
	os.WriteFile(hooks, bytes.Replace(b, []byte(`"timeout": 10`), []byte(`"timeout": 11`), 1), 0o644)
	if s := p.statusOf("codex"); s["state"] != "needs-user-review" {
		t.Fatalf("tampered codex: %v", s)
	}
	// Claude receipts whose store_id is edited: configured-awaiting-proof.
	for _, r := range p.receipts() {
		if rc := p.receipt(r); rc.HarnessID == "claude-code" {
			path := filepath.Join(p.dir, r)
			b, _ := os.ReadFile(path)
			os.WriteFile(path, bytes.Replace(b, []byte(rc.StoreID), []byte("11111111-2222-4333-8444-555555555555"), 1), 0o600)
		}
	}
	if s := p.statusOf("claude-code"); s["state"] != "configured-awaiting-proof" {
		t.Fatalf("edited receipts: %v", s)
	}
	// A capability key is refused, on a start and on a stop, with exit 1
	// through the installed command line (the clients' non-blocking
	// failure), and leaves the receipt set unchanged.
	before := p.receipts()
	for _, f := range []string{"session-start.json", "stop.json"} {
		r = p.fire("claude-code", p.payload("claude-code", f, func(m map[string]any) { m["capability"] = "trcap_v1_x" }))
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "forbidden") {
			t.Fatalf("capability (%s): %d %q %s", f, r.code, r.stdout, r.stderr)
		}
	}
	if after := p.receipts(); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Fatal("a refused hook changed the receipts")
	}
}

// A unique string in transcript_path, last_assistant_message, a benign
// unknown key and the task hint (and in a refused forbidden field) never
// reaches any byte under .tree-ring, nor stderr.
func TestPrivacyCanary(t *testing.T) {
	p := newE2E(t, ".claude", ".codex", ".pi")
	const canary = "CANARY-5b9e0c1d-never-store-me"
	var stderr strings.Builder
	mark := func(m map[string]any) {
		m["transcript_path"] = "/home/u/" + canary + ".jsonl"
		if _, ok := m["last_assistant_message"]; ok || m["hook_event_name"] == "Stop" {
			m["last_assistant_message"] = "done " + canary
		}
		m["x_host_note_"+strings.ToLower(canary[:6])] = canary
	}
	for _, c := range [][2]string{
		{"claude-code", "session-start.json"}, {"claude-code", "subagent-start.json"}, {"claude-code", "stop.json"},
		{"claude-code", "subagent-stop.json"}, {"codex", "session-start.json"}, {"codex", "stop.json"},
	} {
		r := p.fire(c[0], p.payload(c[0], c[1], mark))
		stderr.WriteString(r.stderr)
		if r.code != 0 {
			t.Fatalf("%v: %s", c, r.stderr)
		}
	}
	r := p.fire("codex", p.payload("codex", "session-start.json", func(m map[string]any) { mark(m); m["token"] = canary; m["capability"] = canary }))
	stderr.WriteString(r.stderr)
	if r.code != 1 {
		t.Fatalf("forbidden key: exit %d, want the hook's failure exit 1", r.code)
	}
	pi := fmt.Sprintf(`{"agent_profile":"pi","workflow_id":"w","session_id":"s","task_hint":"how do we ship %s safely"}`, canary)
	for _, hint := range []string{pi, strings.Replace(pi, "how do we ship", "my diagnosis of", 1)} {
		r := p.exec(p.dir, hint, p.bin, "--root", ".tree-ring", "integrations", "preflight", "--harness", "pi", "--input-json-stdin", "--context-format", "pi-before-agent-start")
		stderr.WriteString(r.stderr)
		if r.code != 0 {
			t.Fatalf("pi: %s", r.stderr)
		}
	}
	r = p.exec(p.dir, strings.Replace(pi, `"task_hint"`, `"`+canary+`":1,"task_hint"`, 1), p.bin, "--root", ".tree-ring", "integrations", "preflight", "--harness", "pi", "--input-json-stdin", "--context-format", "pi-before-agent-start")
	stderr.WriteString(r.stderr)
	if r.code != 0 {
		t.Fatalf("pi: a benign unknown key is ignored, not refused: %s", r.stderr)
	}
	if strings.Contains(stderr.String(), canary) || strings.Contains(stderr.String(), strings.ToLower(canary[:6])) {
		t.Fatalf("stderr carries the canary: %q", stderr.String())
	}
	files, all := treeScan(t, filepath.Join(p.dir, ".tree-ring"))
	if hits := bytes.Count(all, []byte(canary)); hits != 0 {
		t.Fatalf("the canary reached a file under .tree-ring (%d hits)", hits)
	}
	if strings.Count(p.cli("events", "--type", "receipt.recorded"), "\n") != 6 {
		t.Fatal("expected six receipts (three starts, three Pi preflights)")
	}
	t.Logf("canary: hooks and preflight: %d files (%d bytes) under .tree-ring and %d bytes of stderr searched, 0 hits",
		files, len(all), stderr.Len())
}

// 32 hook processes started at once: all succeed, all 32 receipts are
// recorded (in the ledger and on disk), and audit verify passes.
func TestHookConcurrent32(t *testing.T) {
	p := newE2E(t, ".codex")
	const n = 32
	var wg sync.WaitGroup
	results := make([]result, n)
	cmdline := p.command("codex", "SessionStart")
	cmds := make([]*exec.Cmd, n)
	outs := make([]*bytes.Buffer, n)
	errs := make([]*bytes.Buffer, n)
	for i := range cmds {
		c := exec.Command("/bin/sh", "-c", cmdline)
		c.Dir = p.cwd
		c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + p.home}
		c.Stdin = strings.NewReader(p.payload("codex", "session-start.json", func(m map[string]any) { m["session_id"] = fmt.Sprintf("session-%02d", i) }))
		outs[i], errs[i] = &bytes.Buffer{}, &bytes.Buffer{}
		c.Stdout, c.Stderr = outs[i], errs[i]
		cmds[i] = c
	}
	for i, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func(i int, c *exec.Cmd) {
			defer wg.Done()
			err := c.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			results[i] = result{code, outs[i].String(), errs[i].String()}
		}(i, c)
	}
	wg.Wait()
	failures := 0
	for _, r := range results {
		if r.code != 0 || r.stderr != "" {
			failures++
		}
	}
	if failures > 0 {
		t.Errorf("%d of %d hook processes failed", failures, n)
	}
	for _, r := range results {
		contextOf(t, r)
	}
	rs := p.receipts()
	if len(rs) != n {
		t.Fatalf("%d receipts on disk, want %d", len(rs), n)
	}
	recorded := strings.Count(p.cli("events", "--type", "receipt.recorded"), "\n")
	if recorded != n {
		t.Fatalf("%d receipt.recorded events, want %d", recorded, n)
	}
	p.cli("audit", "verify") // fails the test unless it exits 0
	ids := map[string]bool{}
	for _, r := range p.receipts() {
		ids[p.receipt(r).ReceiptID] = true
	}
	if len(ids) != n || !receipt.ValidID(p.receipt(p.receipts()[0]).ReceiptID) {
		t.Fatal("receipt ids are not distinct")
	}
	t.Logf("hooks: %d processes, %d failures, %d receipts on disk, %d receipt.recorded events, %d distinct receipt ids, verify passed",
		n, failures, len(rs), recorded, len(ids))
}
