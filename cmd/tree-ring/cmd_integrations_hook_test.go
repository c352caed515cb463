package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/activation"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events/receipt"
)

// hp is a project driven in-process with one clock and one id source across
// invocations (so that appends never reuse an event id). The project path
// contains a space. A stub (hpProgram) stands in for the running build,
// and is already at .tree-ring/bin/tree-ring, so that init does not copy
// the test binary.
type hp struct {
	t    *testing.T
	dir  string // canonical project root
	now  time.Time
	n    uint64
	env  map[string]string
	cwd  string // the hook's working directory (nested)
	home string
	// program is the running build of its invocations (hpProgram unless
	// a test upgrades it).
	program string
}

var hpStart = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// hpProgram is the running build of an hp project's invocations.
const hpProgram = "#!/bin/sh\nexit 0\n"

func newHP(t *testing.T, markers ...string) *hp {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := &hp{t: t, dir: filepath.Join(base, "my project"), now: hpStart, env: map[string]string{}, home: filepath.Join(base, "home"), program: hpProgram}
	p.cwd = filepath.Join(p.dir, "src", "deep")
	for _, d := range append([]string{p.cwd, p.home}, markers...) {
		if !filepath.IsAbs(d) {
			d = filepath.Join(p.dir, d)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(p.dir, ".tree-ring", "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, ".tree-ring", "bin", "tree-ring"), []byte(hpProgram), 0o755); err != nil {
		t.Fatal(err)
	}
	p.env["HOME"] = p.home
	// A Codex that trusts the project and Tree Ring's hooks (status reads
	// both layers; cmd_integrations_trust_test.go covers the others).
	p.env["CODEX_HOME"] = writeCodexHome(t, filepath.Join(base, "codex-home"), codexConfig(t, p.dir, true, true))
	return p
}

func (p *hp) deps() deps {
	return deps{Clock: Clock{
		Now: func() time.Time { p.now = p.now.Add(time.Second); return p.now },
		NewID: func() ulid.ULID {
			p.n++
			var id ulid.ULID
			_ = id.SetTime(ulid.Timestamp(p.now))
			copy(id[8:], fmt.Appendf(nil, "%08d", p.n))
			return id
		},
		Nonce: testNonce,
	}, Seams: Seams{Companion: p.fleet(), RunningBuild: func() ([]byte, error) { return []byte(p.program), nil }}}
}

// raw runs tree-ring with exactly args.
func (p *hp) raw(stdin string, args ...string) result {
	p.t.Helper()
	return invocation{deps: p.deps(), env: p.env, stdin: stdin}.run(args...)
}

// run runs tree-ring on the project's store.
func (p *hp) run(stdin string, args ...string) result {
	p.t.Helper()
	return p.raw(stdin, append([]string{"--root", filepath.Join(p.dir, ".tree-ring"), "--source-root", p.dir}, args...)...)
}

func (p *hp) ok(stdin string, args ...string) string {
	p.t.Helper()
	r := p.run(stdin, args...)
	if r.code != 0 {
		p.t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
	}
	return r.stdout
}

func (p *hp) init() {
	p.t.Helper()
	p.ok("", "init")
}

// payload is a real-client hook payload with cwd set to the nested
// directory, changed by edit.
func (p *hp) payload(harness, file string, edit func(map[string]any)) string {
	p.t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "harness-payloads", harness, file))
	if err != nil {
		p.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		p.t.Fatal(err)
	}
	m["cwd"] = p.cwd
	if edit != nil {
		edit(m)
	}
	out, _ := json.Marshal(m)
	return string(out)
}

// hook runs the lifecycle hook as the installed command line does (the
// root is "$project_root/.tree-ring"; no --source-root).
func (p *hp) hook(harness, stdin string) result {
	p.t.Helper()
	return p.raw(stdin, "--root", filepath.Join(p.dir, ".tree-ring"), "integrations", "hook", "--harness", harness, "--input-json-stdin")
}

// receipts lists receipt files, project-relative, sorted.
func (p *hp) receipts() []string {
	p.t.Helper()
	var out []string
	root := filepath.Join(p.dir, receipt.Dir)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(p.dir, path)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		p.t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func (p *hp) receipt(rel string) receipt.Receipt {
	p.t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dir, rel))
	if err != nil {
		p.t.Fatal(err)
	}
	r, err := receipt.Decode(b)
	if err != nil {
		p.t.Fatal(err)
	}
	return r
}

type statusOut struct {
	StoreID      string            `json:"store_id"`
	Integrations []json.RawMessage `json:"integrations"`
}

// status returns each harness's status entry as a raw object (so that a
// zero count can be told from an absent one).
func (p *hp) status() map[string]map[string]any {
	p.t.Helper()
	var s statusOut
	if err := json.Unmarshal([]byte(p.ok("", "--json", "integrations", "status")), &s); err != nil {
		p.t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, raw := range s.Integrations {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			p.t.Fatal(err)
		}
		out[m["id"].(string)] = m
	}
	return out
}

func (p *hp) state(id string) string {
	p.t.Helper()
	e, ok := p.status()[id]
	if !ok {
		p.t.Fatalf("status lists no %s", id)
	}
	return e["state"].(string)
}

// eventTypes lists the ledger's event types in order.
func (p *hp) eventTypes() []string {
	p.t.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(p.ok("", "events")), "\n") {
		var e struct{ Type string }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			p.t.Fatal(err)
		}
		out = append(out, e.Type)
	}
	return out
}

func count(xs []string, x string) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

// oneObject decodes stdout as exactly one JSON object with a trailing
// newline and nothing else.
func oneObject(t *testing.T, out string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, out)
	}
	if dec.More() || !strings.HasSuffix(out, "}\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("stdout holds more than one JSON object line: %q", out)
	}
	return m
}

func TestHookSessionStartDeliversAndProves(t *testing.T) {
	p := newHP(t, ".claude", ".codex")
	p.init()
	r := p.hook("claude-code", p.payload("claude-code", "session-start.json", nil))
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	out := oneObject(t, r.stdout)
	hso, _ := out["hookSpecificOutput"].(map[string]any)
	if len(out) != 1 || len(hso) != 2 || hso["hookEventName"] != "SessionStart" ||
		!strings.HasPrefix(hso["additionalContext"].(string), "Tree Ring Memory scoped preflight recall:\n- No safe memories matched") {
		t.Fatalf("output %v", out)
	}
	rs := p.receipts()
	if len(rs) != 1 {
		t.Fatalf("receipts %v", rs)
	}
	rc := p.receipt(rs[0])
	m := p.manifestOf()
	want := receipt.Receipt{
		SchemaVersion: 1, ProtocolVersion: 1, ReceiptID: rc.ReceiptID, HarnessID: "claude-code", AdapterVersion: "4",
		BridgeFingerprint: m.Harnesses["claude-code"].BridgeFingerprint, StoreID: m.StoreID, ProjectRootFingerprint: m.ProjectRootFingerprint,
		WorkerKeyFingerprint: preflight.WorkerKeyFingerprint("claude-code", "claude-code"),
		Session:              preflight.Identity{AgentProfile: "claude-code", WorkflowID: "abc123", SessionID: "abc123"},
		State:                "active", QueryClass: "startup_fallback", ResultCount: 0,
		SelectedMemoryIDsSHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		DurationMS:              rc.DurationMS, Status: "success", RecordedAt: rc.RecordedAt,
	}
	if rc != want || rs[0] != rc.Path() || !receipt.ValidID(rc.ReceiptID) {
		t.Fatalf("receipt\n got %+v\nwant %+v", rc, want)
	}
	fi, _ := os.Stat(filepath.Join(p.dir, rs[0]))
	di, _ := os.Stat(filepath.Dir(filepath.Join(p.dir, rs[0])))
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("modes %v %v, want 0600 and 0700", fi.Mode(), di.Mode())
	}
	st := p.status()["claude-code"]
	if st["state"] != "active" || st["last_recall_result_count"] != 0.0 || st["last_recall_query_class"] != "startup_fallback" ||
		st["receipt_age_seconds"] == nil || st["next_step"] != "No action required for the receipt-backed session." {
		t.Fatalf("status %v", st)
	}
	if got := p.eventTypes(); count(got, "preflight.succeeded") != 1 || count(got, "receipt.recorded") != 1 {
		t.Fatalf("events %v", got)
	}
	human := p.ok("", "integrations", "status", "--verbose")
	for _, l := range []string{"Claude Code: active\n", "  last-recall-results: 0\n", "  last-recall-query: startup_fallback\n", "  managed: .claude/settings.json, .claude/skills/tree-ring-memory/SKILL.md\n"} {
		if !strings.Contains(human, l) {
			t.Errorf("human status lacks %q:\n%s", l, human)
		}
	}
	p.ok("", "audit", "verify")
}

func (p *hp) manifestOf() adapters.Manifest {
	p.t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dir, adapters.ManifestPath))
	if err != nil {
		p.t.Fatal(err)
	}
	m, err := adapters.DecodeManifest(b)
	if err != nil {
		p.t.Fatal(err)
	}
	return m
}

func TestHookWorkersAndStops(t *testing.T) {
	p := newHP(t, ".claude", ".codex")
	p.init()
	for _, f := range []string{"session-start.json", "subagent-start.json"} {
		if r := p.hook("codex", p.payload("codex", f, nil)); r.code != 0 {
			t.Fatalf("%s: %s", f, r.stderr)
		}
	}
	second := p.payload("codex", "subagent-start.json", func(m map[string]any) { m["agent_id"] = "another-child" })
	if r := p.hook("codex", second); r.code != 0 {
		t.Fatal(r.stderr)
	}
	rs := p.receipts()
	if len(rs) != 3 {
		t.Fatalf("receipts %v", rs)
	}
	workers, stores := map[string]bool{}, map[string]bool{}
	for _, r := range rs {
		rc := p.receipt(r)
		workers[rc.WorkerKeyFingerprint] = true
		stores[rc.StoreID] = true
	}
	if len(workers) != 3 || len(stores) != 1 {
		t.Fatalf("workers %v stores %v", workers, stores)
	}
	sub := p.receipt(rs[0])
	for _, r := range rs {
		if rc := p.receipt(r); strings.HasPrefix(rc.Session.AgentProfile, "codex:explorer:") {
			sub = rc
		}
	}
	if sub.Session.WorkflowID != "019a1b2c-3d4e-7f60-8a9b-0c1d2e3f4a5b" || !strings.HasPrefix(sub.Session.AgentProfile, "codex:explorer:") {
		t.Errorf("subagent identity %+v", sub.Session)
	}

	r := p.hook("codex", p.payload("codex", "stop.json", nil))
	out := oneObject(t, r.stdout)
	reason, _ := out["reason"].(string)
	if r.code != 0 || len(out) != 2 || out["decision"] != "block" || strings.Count(reason, " capture SUMMARY --event-type TYPE --ring RING ") != 3 ||
		!strings.Contains(reason, `--agent-profile codex --workflow-id 019a1b2c-3d4e-7f60-8a9b-0c1d2e3f4a5b`) ||
		!strings.Contains(reason, `--project `+preflight.Normalized("project", "my project")+" ") {
		t.Fatalf("stop: %d %v %s", r.code, out, r.stderr)
	}
	r = p.hook("claude-code", p.payload("claude-code", "stop-active.json", nil))
	if r.code != 0 || r.stdout != "{}\n" {
		t.Fatalf("stop_hook_active: %d %q %s", r.code, r.stdout, r.stderr)
	}
	r = p.hook("claude-code", p.payload("claude-code", "subagent-stop.json", nil))
	if r.code != 0 || !strings.Contains(r.stdout, `--agent-profile claude-code --workflow-id abc123 --session-id def456`) {
		t.Fatalf("subagent stop: %s %s", r.stdout, r.stderr)
	}
	if len(p.receipts()) != 3 {
		t.Error("a stop wrote a receipt")
	}
}

func TestHookAbsentStoreIsSilent(t *testing.T) {
	p := newHP(t)
	if err := os.RemoveAll(filepath.Join(p.dir, ".tree-ring")); err != nil {
		t.Fatal(err)
	}
	before := hashTree(t, filepath.Dir(p.dir))
	r := p.hook("codex", p.payload("codex", "session-start.json", nil))
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("absent store: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if after := hashTree(t, filepath.Dir(p.dir)); !mapsEqual(before, after) {
		t.Fatal("the hook created something without a store")
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Every failure: nothing on stdout, one line on stderr, the receipt set
// unchanged, and exit 1 (the clients' non-blocking failure; exit 2 from a
// stop hook would continue the agent with the stderr as its reason),
// except a --harness that answers no hook: a usage error, exit 2.
func TestHookFailuresPrintNothing(t *testing.T) {
	p := newHP(t, ".claude", ".codex")
	p.init()
	if r := p.hook("codex", p.payload("codex", "session-start.json", nil)); r.code != 0 {
		t.Fatal(r.stderr)
	}
	receipts := p.receipts()
	store := filepath.Join(p.dir, ".tree-ring")
	outside := t.TempDir()
	cases := []struct {
		name  string
		args  []string
		stdin string
		exit  int
	}{
		{"capability key", nil, p.payload("codex", "session-start.json", func(m map[string]any) { m["capability"] = "trcap_v1_x" }), 1},
		{"store_id key", nil, p.payload("codex", "session-start.json", func(m map[string]any) { m["store_id"] = "x" }), 1},
		{"task_hint key", nil, p.payload("codex", "session-start.json", func(m map[string]any) { m["task_hint"] = "x" }), 1},
		{"token key", nil, p.payload("codex", "session-start.json", func(m map[string]any) { m["token"] = "x" }), 1},
		{"coordinator token key", nil, p.payload("codex", "session-start.json", func(m map[string]any) { m["TREE_RING_COORDINATOR_TOKEN"] = "x" }), 1},
		{"bridge_fingerprint key", nil, p.payload("codex", "session-start.json", func(m map[string]any) { m["bridge_fingerprint"] = "x" }), 1},
		{"harness_id key", nil, p.payload("codex", "session-start.json", func(m map[string]any) { m["harness_id"] = "codex" }), 1},
		{"state key", nil, p.payload("codex", "session-start.json", func(m map[string]any) { m["State"] = "active" }), 1},
		{"receipt key", nil, p.payload("codex", "session-start.json", func(m map[string]any) { m["receipt"] = map[string]any{} }), 1},
		{"receipt_id key", nil, p.payload("codex", "session-start.json", func(m map[string]any) { m["receipt_id"] = "receipt-x" }), 1},
		{"root key", nil, p.payload("codex", "session-start.json", func(m map[string]any) { m["root"] = outside }), 1},
		{"project_root_fingerprint key", nil, p.payload("codex", "session-start.json", func(m map[string]any) { m["project_root_fingerprint"] = "x" }), 1},
		{"invalid UTF-8 session", nil, strings.Replace(p.payload("codex", "session-start.json", func(m map[string]any) { m["session_id"] = "sINVALID" }), "INVALID", "\xff", 1), 1},
		{"cwd is a file", nil, p.payload("codex", "session-start.json", func(m map[string]any) { m["cwd"] = filepath.Join(p.dir, ".codex", "hooks.json") }), 1},
		{"empty object", nil, `{}`, 1},
		{"not json", nil, `hello`, 1},
		{"cwd outside", nil, p.payload("codex", "session-start.json", func(m map[string]any) { m["cwd"] = outside }), 1},
		{"cwd missing dir", nil, p.payload("codex", "session-start.json", func(m map[string]any) { m["cwd"] = filepath.Join(p.dir, "nope") }), 1},
		{"unhooked event", nil, p.payload("codex", "pre-compact-unhooked.json", nil), 1},
		{"stop with a store_id key", nil, p.payload("codex", "stop.json", func(m map[string]any) { m["store_id"] = "x" }), 1},
		{"subagent stop without agent_id", nil, p.payload("codex", "subagent-stop.json", func(m map[string]any) { delete(m, "agent_id") }), 1},
		{"claude-code stop outside", []string{"--root", store, "integrations", "hook", "--harness", "claude-code", "--input-json-stdin"},
			p.payload("claude-code", "stop.json", func(m map[string]any) { m["cwd"] = outside }), 1},
		{"claude-code subagent stop with a token", []string{"--root", store, "integrations", "hook", "--harness", "claude-code", "--input-json-stdin"},
			p.payload("claude-code", "subagent-stop.json", func(m map[string]any) { m["token"] = "x" }), 1},
		{"unknown harness", []string{"--root", store, "integrations", "hook", "--harness", "pi", "--input-json-stdin"}, p.payload("codex", "session-start.json", nil), 2},
		{"no stdin flag", []string{"--root", store, "integrations", "hook", "--harness", "codex"}, p.payload("codex", "session-start.json", nil), 1},
		{"an argument", []string{"--root", store, "integrations", "hook", "--harness", "claude-code", "--input-json-stdin", "x"}, p.payload("claude-code", "stop.json", nil), 1},
		{"non .tree-ring root", []string{"--root", filepath.Join(p.dir, "src"), "integrations", "hook", "--harness", "codex", "--input-json-stdin"}, p.payload("codex", "session-start.json", nil), 1},
	}
	for _, c := range cases {
		args := c.args
		if args == nil {
			args = []string{"--root", store, "integrations", "hook", "--harness", "codex", "--input-json-stdin"}
		}
		r := p.raw(c.stdin, args...)
		t.Logf("%s: %s", c.name, r.stderr)
		if r.code != c.exit || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%s: exit %d stdout %q stderr %q", c.name, r.code, r.stdout, r.stderr)
		}
		if got := p.receipts(); !slices.Equal(got, receipts) {
			t.Errorf("%s: receipts changed: %v", c.name, got)
		}
	}
	if got := p.eventTypes(); count(got, "receipt.recorded") != 1 {
		t.Errorf("a refused hook appended: %v", got)
	}
}

// A broken store is an error, never a silent success: a file or a symlink
// in place of .tree-ring, a store without a manifest, a malformed manifest.
// Every event of both harnesses then fails with exit 1, the failure their
// hosts log and skip: a stop hook that exited 2 would continue the agent
// with the stderr as its reason (docs/exit-codes.md).
func TestHookBrokenStores(t *testing.T) {
	setups := map[string]func(p *hp){
		"file": func(p *hp) {
			os.RemoveAll(filepath.Join(p.dir, ".tree-ring"))
			os.WriteFile(filepath.Join(p.dir, ".tree-ring"), []byte("x"), 0o644)
		},
		"dangling symlink": func(p *hp) {
			os.RemoveAll(filepath.Join(p.dir, ".tree-ring"))
			os.Symlink(filepath.Join(p.dir, "gone"), filepath.Join(p.dir, ".tree-ring"))
		},
		"directory symlink": func(p *hp) {
			os.Rename(filepath.Join(p.dir, ".tree-ring"), filepath.Join(p.dir, "real"))
			os.Symlink(filepath.Join(p.dir, "real"), filepath.Join(p.dir, ".tree-ring"))
		},
		"no manifest":        func(p *hp) { os.Remove(filepath.Join(p.dir, adapters.ManifestPath)) },
		"malformed manifest": func(p *hp) { os.WriteFile(filepath.Join(p.dir, adapters.ManifestPath), []byte("{"), 0o644) },
		"emptied manifest":   func(p *hp) { os.WriteFile(filepath.Join(p.dir, adapters.ManifestPath), []byte("{}\n"), 0o644) },
		"tampered bridges": func(p *hp) {
			os.WriteFile(filepath.Join(p.dir, ".codex/hooks.json"), []byte("{}\n"), 0o644)
			os.WriteFile(filepath.Join(p.dir, ".claude/settings.json"), []byte("{}\n"), 0o644)
		},
		// A stop does not open the ledger (checkStop): only starts fail.
		"no ledger": func(p *hp) { os.Remove(filepath.Join(p.dir, ".tree-ring", "ledger.db")) },
	}
	events := []struct{ harness, payload string }{
		{"codex", "session-start.json"}, {"codex", "stop.json"}, {"codex", "subagent-stop.json"},
		{"claude-code", "session-start.json"}, {"claude-code", "subagent-start.json"}, {"claude-code", "stop.json"}, {"claude-code", "subagent-stop.json"},
	}
	for name, setup := range setups {
		t.Run(name, func(t *testing.T) {
			p := newHP(t, ".claude", ".codex")
			p.init()
			setup(p)
			for _, e := range events {
				if name == "no ledger" && strings.Contains(e.payload, "stop") {
					continue
				}
				r := p.hook(e.harness, p.payload(e.harness, e.payload, nil))
				t.Logf("%s %s: %s", e.harness, e.payload, r.stderr)
				if r.code != 1 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || strings.Contains(r.stderr, p.dir) {
					t.Errorf("%s %s: exit %d stdout %q stderr %q", e.harness, e.payload, r.code, r.stdout, r.stderr)
				}
			}
			if rs := p.receipts(); len(rs) != 0 {
				t.Fatalf("receipt written: %v", rs)
			}
		})
	}
}

// 101 preflights of one worker keep 100 receipts on disk and in the index;
// the ledger keeps all 101 receipt events and one receipt.pruned.
func TestHookRetention101(t *testing.T) {
	p := newHP(t, ".codex")
	p.init()
	in := p.payload("codex", "session-start.json", nil)
	var first string
	for i := 0; i < 101; i++ {
		if r := p.hook("codex", in); r.code != 0 {
			t.Fatalf("preflight %d: %s", i, r.stderr)
		}
		if i == 0 {
			first = p.receipts()[0]
		}
	}
	rs := p.receipts()
	if len(rs) != 100 || slices.Contains(rs, first) {
		t.Fatalf("%d receipts on disk (first kept: %v)", len(rs), slices.Contains(rs, first))
	}
	got := p.eventTypes()
	if count(got, "receipt.recorded") != 101 || count(got, "receipt.pruned") != 1 {
		t.Fatalf("events: %d recorded, %d pruned", count(got, "receipt.recorded"), count(got, "receipt.pruned"))
	}
	if p.state("codex") != "active" {
		t.Error("codex not active")
	}
	p.ok("", "audit", "verify")
}

// A receipt 31 days old no longer proves: status reports
// configured-awaiting-proof, and the next preflight records its move from
// that state (the FSM's state at now, with the derived expiry).
func TestReceipt31DaysOld(t *testing.T) {
	p := newHP(t, ".codex")
	p.init()
	in := p.payload("codex", "session-start.json", nil)
	if r := p.hook("codex", in); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if p.state("codex") != "active" {
		t.Fatal("not active")
	}
	p.now = p.now.Add(30*24*time.Hour - time.Minute)
	if p.state("codex") != "active" {
		t.Fatal("a receipt younger than 30 days expired")
	}
	p.now = p.now.Add(24 * time.Hour)
	st := p.status()["codex"]
	if st["state"] != "configured-awaiting-proof" || st["last_recall_result_count"] != nil || st["next_step"] != activation.NextAwaitingProof("Codex") {
		t.Fatalf("31 days later: %v", st)
	}
	if r := p.hook("codex", in); r.code != 0 {
		t.Fatal(r.stderr)
	}
	out := p.ok("", "events", "--type", "preflight.succeeded")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], `"from":"configured-awaiting-proof","to":"active"`) {
		t.Fatalf("second proof: %s", lines[len(lines)-1])
	}
	if rs := p.receipts(); len(rs) != 1 {
		t.Fatalf("the expired receipt was not pruned from disk: %v", rs)
	}
	if p.state("codex") != "active" {
		t.Error("not active after a new proof")
	}
	p.ok("", "audit", "verify")
}

// TestHookSessionStartGolden pins the bytes each hook-answering harness
// receives on SessionStart, with one project memory to recall: exactly
// one hookSpecificOutput object and a newline (-update rewrites them).
func TestHookSessionStartGolden(t *testing.T) {
	for _, harness := range harnessIDs(answersHooks) {
		t.Run(harness, func(t *testing.T) {
			markers := []string{".claude", ".codex"}
			if a, _ := adapters.Lookup(harness); !slices.Contains(markers, a.ProjectMarkers[0]) {
				markers = append(markers, a.ProjectMarkers[0])
			}
			p := newHP(t, markers...)
			p.init()
			p.ok("", "--source-root", p.dir, "remember", "Run the full test suite before every commit.",
				"--event-type", "preference", "--ring", "heartwood", "--scope", "project", "--project", "my project")
			r := p.hook(harness, p.payload(harness, "session-start.json", nil))
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			golden(t, "hook_"+harness+"_session_start.json", []byte(r.stdout))
		})
	}
}

// Every real-client payload under testdata/harness-payloads (each field a
// client sends, the 2.1.328 and 0.169.0 captures included) is accepted:
// start events print their context, stops their checkpoint or {}.
func TestHookAcceptsEveryRealPayload(t *testing.T) {
	for _, harness := range []string{"claude-code", "codex"} {
		dir := filepath.Join("..", "..", "testdata", "harness-payloads", harness)
		var files []string // relative to dir, the version directories included
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") && d.Name() != "pre-compact-unhooked.json" {
				rel, _ := filepath.Rel(dir, path)
				files = append(files, rel)
			}
			return err
		})
		if err != nil || len(files) < 10 {
			t.Fatalf("%s payloads: %v %v", harness, files, err)
		}
		p := newHP(t, ".claude", ".codex")
		p.init()
		for _, f := range files {
			r := p.hook(harness, p.payload(harness, f, nil))
			if r.code != 0 {
				t.Errorf("%s/%s: exit %d: %s", harness, f, r.code, r.stderr)
				continue
			}
			oneObject(t, r.stdout)
		}
	}
}

// The error table's hook row: a hook's handled error exits with its
// adapter's failure exit instead of 2 and keeps its cause's diagnostic
// and message; an interrupted hook stays 130; the same causes outside a
// hook keep the protocol's exit.
func TestHookFailureExitTable(t *testing.T) {
	codex, _ := adapters.Lookup("codex")
	locked := &bolt.LockedError{Path: "/x/ledger.db", Timeout: time.Second}
	for _, c := range []struct {
		name       string
		err        error
		exit       int
		diagnostic string
	}{
		{"locked", locked, 2, "ledger_locked"},
		{"hook locked", &hookFailure{exit: codex.HookFailureExit(), err: pathless(locked)}, 1, "ledger_locked"},
		{"hook usage", &hookFailure{exit: 1, err: usagef("x")}, 1, "usage"},
		{"hook cancelled", &hookFailure{exit: 1, err: context.Canceled}, 130, "error"},
		{"hook unmatched", &hookFailure{exit: 1, err: errors.New("x")}, 1, "error"},
		{"usage", usagef("x"), 2, "usage"},
	} {
		if got := exitCode(c.err); got != c.exit {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.exit)
		}
		if got := diagnostic(c.err); got != c.diagnostic {
			t.Errorf("%s: diagnostic %q, want %q", c.name, got, c.diagnostic)
		}
	}
	if got := (&hookFailure{exit: 1, err: pathless(locked)}).Error(); strings.Contains(got, "/x/") {
		t.Errorf("message %q names the path", got)
	}
}
