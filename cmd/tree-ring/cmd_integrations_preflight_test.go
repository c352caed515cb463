package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/events/receipt"
)

type jsonPreflight struct {
	Context string          `json:"context"`
	State   string          `json:"state"`
	Receipt json.RawMessage `json:"receipt"`
}

func decodePreflight(t *testing.T, out string) (jsonPreflight, map[string]any) {
	t.Helper()
	m := oneObject(t, out)
	if len(m) != 3 {
		t.Fatalf("response keys %v", m)
	}
	var r jsonPreflight
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	var summary map[string]any
	if err := json.Unmarshal(r.Receipt, &summary); err != nil {
		t.Fatal(err)
	}
	return r, summary
}

// treeBytes concatenates every file under dir (the ledger included), for
// privacy assertions.
func treeBytes(t *testing.T, dir string) []byte {
	t.Helper()
	_, all := treeScan(t, dir)
	return all
}

// treeScan is treeBytes with the number of regular files read, which the
// privacy canaries report.
func treeScan(t *testing.T, dir string) (files int, all []byte) {
	t.Helper()
	filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(path)
			all = append(all, b...)
			files++
		}
		return nil
	})
	return files, all
}

func TestPreflightPi(t *testing.T) {
	p := newHP(t, ".pi")
	p.init()
	if s := p.state("pi"); s != "needs-trust" {
		t.Fatalf("pi before proof: %s", s)
	}
	const hint = "release checklist for the parser rewrite"
	in := `{"agent_profile":"pi","workflow_id":"/home/u/.pi/sessions/2026.jsonl","session_id":"/home/u/.pi/sessions/2026.jsonl","task_hint":"` + hint + `"}`
	r := p.run(in, "integrations", "preflight", "--harness", "pi", "--input-json-stdin", "--context-format", "pi-before-agent-start")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	resp, summary := decodePreflight(t, r.stdout)
	// The store is empty: the hint's search found nothing, so the brief is
	// the (empty) startup brief.
	if resp.State != "active" || summary["harness_id"] != "pi" || summary["query_class"] != "startup_fallback" || summary["result_count"] != 0.0 ||
		summary["session"] != nil || summary["state"] != nil || len(summary) != 15 || !strings.HasPrefix(resp.Context, "Tree Ring Memory scoped preflight recall:\n") {
		t.Fatalf("pi response %s", r.stdout)
	}
	rs := p.receipts()
	if len(rs) != 1 {
		t.Fatalf("receipts %v", rs)
	}
	rc := p.receipt(rs[0])
	if rc.ReceiptID != summary["receipt_id"] || strings.Contains(rc.Session.WorkflowID, "/") || !strings.HasPrefix(rc.Session.SessionID, "session-") {
		t.Fatalf("pi receipt %+v", rc)
	}
	if p.state("pi") != "active" {
		t.Error("pi not active after its proof")
	}
	if ev := p.ok("", "events", "--type", "preflight.succeeded"); !strings.Contains(ev, `"task_hint_sha256":"`) || !strings.Contains(ev, `"task_hint_chars":40`) {
		t.Errorf("a safe hint is recorded as a digest and a length: %s", ev)
	}
	all := treeBytes(t, filepath.Join(p.dir, ".tree-ring"))
	if strings.Contains(string(all), hint) || strings.Contains(string(all), "/home/u/.pi") {
		t.Error("the task hint or an absolute session path reached the store")
	}

	// A sensitive hint silently falls back to the startup brief.
	sensitive := strings.Replace(in, hint, "my diagnosis and medication schedule", 1)
	r = p.run(sensitive, "integrations", "preflight", "--harness", "pi", "--input-json-stdin", "--context-format", "pi-before-agent-start")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("sensitive hint: %d %s", r.code, r.stderr)
	}
	if _, summary := decodePreflight(t, r.stdout); summary["query_class"] != "startup_fallback" {
		t.Errorf("sensitive hint class %v", summary["query_class"])
	}
	if strings.Contains(string(treeBytes(t, filepath.Join(p.dir, ".tree-ring"))), "diagnosis") {
		t.Error("the sensitive hint reached the store")
	}

	for name, bad := range map[string]string{
		"state":  strings.Replace(in, `"task_hint"`, `"state":"active","task_hint"`, 1),
		"nested": strings.Replace(in, `"`+hint+`"`, `{"Receipt-Id":"x"}`, 1),
	} {
		r := p.run(bad, "integrations", "preflight", "--harness", "pi", "--input-json-stdin", "--context-format", "pi-before-agent-start")
		if r.code != 2 || r.stdout != "" || len(p.receipts()) != 2 {
			t.Errorf("%s: %d %q %s", name, r.code, r.stdout, r.stderr)
		}
	}

	// Benign host metadata (a model name, anything unknown) is ignored,
	// never stored, logged or echoed (canary).
	const canary = "CANARY-pi-model-5e21"
	benign := strings.Replace(in, `"task_hint"`, `"model":"gpt-x","chat_title":"`+canary+`","task_hint"`, 1)
	r = p.run(benign, "--log-level", "debug", "integrations", "preflight", "--harness", "pi", "--input-json-stdin", "--context-format", "pi-before-agent-start")
	if r.code != 0 || len(p.receipts()) != 3 {
		t.Fatalf("benign metadata refused: %d %s", r.code, r.stderr)
	}
	if out := r.stdout + r.stderr + string(treeBytes(t, filepath.Join(p.dir, ".tree-ring"))); strings.Contains(out, canary) || strings.Contains(out, "gpt-x") {
		t.Error("an ignored field's value reached the output, a log or the store")
	} else {
		t.Log("canary: pi benign metadata: stdout, stderr and the store searched, 0 hits")
	}
}

func TestPreflightClaudeFormatAndDirect(t *testing.T) {
	p := newHP(t, ".claude", ".codex")
	p.init()
	r := p.run(p.payload("claude-code", "session-start.json", nil), "integrations", "preflight", "--harness", "claude-code", "--input-json-stdin", "--context-format", "claude-session-start")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	if out := oneObject(t, r.stdout); out["hookSpecificOutput"].(map[string]any)["hookEventName"] != "SessionStart" {
		t.Fatalf("claude format: %s", r.stdout)
	}
	r = p.run("", "integrations", "preflight", "--harness", "codex", "--agent-profile", "codex", "--workflow-id", "wf 1", "--session-id", "s1")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	if resp, _ := decodePreflight(t, r.stdout); resp.State != "active" {
		t.Fatalf("direct: %s", r.stdout)
	}
	refusals := map[string][]string{
		"direct needs all flags":  {"integrations", "preflight", "--harness", "codex", "--agent-profile", "codex", "--session-id", "s1"},
		"direct only codex":       {"integrations", "preflight", "--harness", "claude-code", "--agent-profile", "a", "--workflow-id", "w", "--session-id", "s"},
		"direct only json":        {"integrations", "preflight", "--harness", "codex", "--agent-profile", "a", "--workflow-id", "w", "--session-id", "s", "--context-format", "pi-before-agent-start"},
		"codex has no stdin":      {"integrations", "preflight", "--harness", "codex", "--input-json-stdin"},
		"claude needs its format": {"integrations", "preflight", "--harness", "claude-code", "--input-json-stdin"},
		"flags with stdin":        {"integrations", "preflight", "--harness", "pi", "--input-json-stdin", "--context-format", "pi-before-agent-start", "--session-id", "s"},
		"unknown format":          {"integrations", "preflight", "--harness", "codex", "--context-format", "xml"},
		"pi not detected":         {"integrations", "preflight", "--harness", "pi", "--input-json-stdin", "--context-format", "pi-before-agent-start"},
	}
	before := p.receipts()
	for name, args := range refusals {
		r := p.run(`{"agent_profile":"pi","workflow_id":"w","session_id":"s"}`, args...)
		if r.code != 2 || r.stdout != "" {
			t.Errorf("%s: %d %q", name, r.code, r.stdout)
		}
		t.Logf("%s: %s", name, r.stderr)
	}
	if len(p.receipts()) != len(before) {
		t.Error("a refused preflight left a receipt")
	}
}

// --canonical-project-root: a preflight against another project's store is
// active-isolated, recorded in that store, and the canonical project's
// files (its ledger included) are not touched.
func TestPreflightIsolated(t *testing.T) {
	canon := newHP(t, ".codex")
	canon.init()
	mem := newHP(t, ".codex")
	mem.init()
	before := hashTree(t, canon.dir)
	args := []string{"integrations", "preflight", "--harness", "codex", "--agent-profile", "codex", "--workflow-id", "w", "--session-id", "s", "--canonical-project-root", canon.dir}
	r := mem.run("", args...)
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	if resp, _ := decodePreflight(t, r.stdout); resp.State != "active-isolated" {
		t.Fatalf("isolated: %s", r.stdout)
	}
	if !mapsEqual(before, hashTree(t, canon.dir)) {
		t.Fatal("the canonical project changed")
	}
	if s := mem.state("codex"); s != "active-isolated" {
		t.Errorf("status %s", s)
	}
	if rc := mem.receipt(mem.receipts()[0]); rc.State != "active-isolated" || rc.StoreID != mem.manifestOf().StoreID {
		t.Errorf("receipt %+v", rc)
	}
	// The same root twice, or a root without a manifest, is refused.
	for _, other := range []string{mem.dir, t.TempDir()} {
		args[len(args)-1] = other
		if r := mem.run("", args...); r.code != 2 || !strings.Contains(r.stderr, "isolated preflight roots are invalid") {
			t.Errorf("%d %s", r.code, r.stderr)
		}
	}
}

const testDescriptor = `{"schema_version":1,"kind":"tree-ring-agent-zero-plugin-capability","plugin_id":"tree_ring_memory","plugin_version":"3.4.0","activation_protocol_version":1,"tree_ring_version":{"min":"0.15.5","minor":"0.15"},"enabled":true}`

func TestPreflightAgentZero(t *testing.T) {
	p := newHP(t)
	p.init()
	plugin := filepath.Join(t.TempDir(), "tree_ring_memory")
	os.MkdirAll(plugin, 0o755)
	os.WriteFile(filepath.Join(plugin, preflight.DescriptorName), []byte(testDescriptor), 0o644)
	os.WriteFile(filepath.Join(plugin, "plugin.yaml"), []byte("name: tree_ring_memory\nversion: 3.4.0\n"), 0o644)
	in := `{"agent_profile":"agent-zero-worker","workflow_id":"wf-1","session_id":"chat-1"}`
	args := []string{"integrations", "preflight", "--harness", "agent-zero", "--input-json-stdin", "--context-format", "json"}
	if p.state("agent-zero") != "needs-plugin" {
		t.Fatal("agent-zero before its plugin")
	}
	if r := p.run(in, args...); r.code != 2 || r.stdout != "" || len(p.receipts()) != 0 {
		t.Fatalf("without the descriptor: %d %q %s", r.code, r.stdout, r.stderr)
	}
	p.env[preflight.DescriptorEnv] = filepath.Join(plugin, preflight.DescriptorName)
	if s := p.state("agent-zero"); s != "configured-awaiting-proof" {
		t.Fatalf("descriptor-scoped status: %s", s)
	}
	r := p.run(in, args...)
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	if resp, summary := decodePreflight(t, r.stdout); resp.State != "active" || summary["harness_id"] != "agent-zero" {
		t.Fatalf("agent zero: %s", r.stdout)
	}
	if ev := p.ok("", "events", "--stream", "harness/agent-zero"); !strings.Contains(ev, `"type":"plugin.descriptor_found"`) ||
		!strings.Contains(ev, `"from":"configured-awaiting-proof","to":"active"`) {
		t.Fatalf("agent zero events: %s", ev)
	}
	if s := p.state("agent-zero"); s != "active" {
		t.Errorf("after proof: %s", s)
	}
	if m := p.manifestOf(); m.Harnesses["agent-zero"].State != "needs-plugin" {
		t.Error("the passive binding record changed")
	}
	// A second proof is a self-loop; without the descriptor status is
	// needs-plugin again although a receipt exists.
	if r := p.run(in, args...); r.code != 0 {
		t.Fatal(r.stderr)
	}
	delete(p.env, preflight.DescriptorEnv)
	if s := p.state("agent-zero"); s != "needs-plugin" {
		t.Errorf("without the descriptor: %s", s)
	}
	p.ok("", "audit", "verify")
}

// If the receipt cannot be written, nothing is printed, no receipt event is
// committed and no receipt exists; the run record says the hook started
// and failed (docs/runs.md) and preflight.failed moves the harness to
// failed, until the next preflight succeeds.
func TestPreflightFailureLeavesNothing(t *testing.T) {
	p := newHP(t, ".codex")
	p.init()
	dir := filepath.Join(p.dir, receipt.WorkerDir("codex", "codex"))
	os.MkdirAll(filepath.Dir(dir), 0o700)
	if err := os.WriteFile(dir, []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	eventsBefore := p.eventTypes()
	r := p.hook("codex", p.payload("codex", "session-start.json", nil))
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "write the receipt") {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if got := p.eventTypes(); !slices.Equal(got[len(eventsBefore):], []string{"run.started", "run.finished", "preflight.failed"}) {
		t.Fatalf("events appended: %v", got[len(eventsBefore):])
	}
	if ev := p.ok("", "events", "--type", "run.finished"); !strings.Contains(ev, `"status":"failed"`) {
		t.Fatalf("run outcome: %s", ev)
	}
	if p.state("codex") != "failed" {
		t.Error("a failed preflight left the state")
	}
	os.Remove(dir)
	if r := p.hook("codex", p.payload("codex", "session-start.json", nil)); r.code != 0 {
		t.Fatal(r.stderr)
	}
	p.ok("", "audit", "verify")
}

// A receipt file left by a crash between the file write and the commit has
// no index entry: it proves nothing and the next write in its directory
// removes it.
func TestStrayReceiptRemoved(t *testing.T) {
	p := newHP(t, ".codex")
	p.init()
	in := p.payload("codex", "session-start.json", nil)
	if r := p.hook("codex", in); r.code != 0 {
		t.Fatal(r.stderr)
	}
	good := p.receipts()[0]
	stray := filepath.Join(filepath.Dir(good), "receipt-01234567-89ab-4def-8123-456789abcdef.json")
	b, _ := os.ReadFile(filepath.Join(p.dir, good))
	os.WriteFile(filepath.Join(p.dir, stray), []byte(strings.Replace(string(b), p.receipt(good).ReceiptID, "receipt-01234567-89ab-4def-8123-456789abcdef", 1)), 0o600)
	os.WriteFile(filepath.Join(p.dir, filepath.Dir(good), "notes.txt"), []byte("not ours"), 0o600)
	if r := p.hook("codex", in); r.code != 0 {
		t.Fatal(r.stderr)
	}
	rs := p.receipts()
	if len(rs) != 3 || contains(rs, stray) || !contains(rs, filepath.Join(filepath.Dir(good), "notes.txt")) {
		t.Fatalf("after the next write: %v", rs)
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// Descriptor-scoped status and preflight (the Agent Zero plugin's calls)
// whose bound project root does not exist in the runtime report
// needs-project-mount (status, top level too) and refuse the preflight
// with that state; a refused descriptor is needs-plugin; without the
// descriptor the calls are what they always were.
func TestAgentZeroNeedsProjectMount(t *testing.T) {
	plugin := filepath.Join(t.TempDir(), "tree_ring_memory")
	os.MkdirAll(plugin, 0o755)
	os.WriteFile(filepath.Join(plugin, preflight.DescriptorName), []byte(testDescriptor), 0o644)
	os.WriteFile(filepath.Join(plugin, "plugin.yaml"), []byte("name: tree_ring_memory\nversion: 3.4.0\n"), 0o644)
	gone := filepath.Join(t.TempDir(), "a0", "usr", "projects", "unmounted")
	root := filepath.Join(gone, ".tree-ring")
	env := map[string]string{preflight.DescriptorEnv: filepath.Join(plugin, preflight.DescriptorName)}
	run := func(stdin string, args ...string) result {
		return invocation{deps: testDeps(), env: env, stdin: stdin}.run(append([]string{"--root", root}, args...)...)
	}
	var rep struct {
		State        string `json:"state"`
		Next         string `json:"next_step"`
		Integrations []struct{ ID, State string }
	}
	r := run("", "--json", "integrations", "status", "--source-root", gone)
	if err := json.Unmarshal([]byte(r.stdout), &rep); r.code != 0 || err != nil {
		t.Fatalf("status: %d %s %v", r.code, r.stderr, err)
	}
	if rep.State != "needs-project-mount" || !strings.HasPrefix(rep.Next, "Make the canonical project root reachable") ||
		len(rep.Integrations) != 1 || rep.Integrations[0].ID != "agent-zero" || rep.Integrations[0].State != "needs-project-mount" {
		t.Fatalf("status %s", r.stdout)
	}
	if text := run("", "integrations", "status"); text.code != 0 || text.stdout != "Agent Zero: needs-project-mount\n  next: "+rep.Next+"\n" {
		t.Errorf("status text %q", text.stdout)
	}
	in := `{"agent_profile":"agent-zero-worker","workflow_id":"wf-1","session_id":"chat-1"}`
	args := []string{"--json", "integrations", "preflight", "--harness", "agent-zero", "--input-json-stdin", "--context-format", "json"}
	if r := run(in, args...); r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "needs-project-mount") || strings.Contains(r.stderr, gone) {
		t.Fatalf("preflight: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Lstat(gone); err == nil {
		t.Fatal("a call created the unreachable root")
	}
	// A refused descriptor: needs-plugin.
	os.WriteFile(filepath.Join(plugin, "plugin.yaml"), []byte("name: other\nversion: 3.4.0\n"), 0o644)
	r = run("", "--json", "integrations", "status", "--source-root", gone)
	if err := json.Unmarshal([]byte(r.stdout), &rep); r.code != 0 || err != nil || rep.State != "needs-plugin" {
		t.Fatalf("refused descriptor: %s %s", r.stdout, r.stderr)
	}
	// Without the descriptor: the ordinary refusals.
	delete(env, preflight.DescriptorEnv)
	if r := run("", "--json", "integrations", "status", "--source-root", gone); r.code != 2 {
		t.Errorf("status without the descriptor: %d %s", r.code, r.stdout)
	}
	if r := run(in, args...); r.code != 2 || !strings.Contains(r.stderr, "run `tree-ring init` first") {
		t.Errorf("preflight without the descriptor: %d %s", r.code, r.stderr)
	}
}
