package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
)

// proj is a temporary project driven through the built binary, as a user
// would: cwd is the project, HOME is a private directory.
type proj struct {
	t         *testing.T
	bin       string
	dir, home string
	// What run's create-only check covered, logged at cleanup for
	// docs/reliability.md: commands run, pre-existing files compared
	// (summed over commands), files that changed.
	commands, compared, changed int
}

func newProj(t *testing.T, markers ...string) *proj {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := &proj{t: t, bin: buildBinary(t), dir: filepath.Join(base, "project"), home: filepath.Join(base, "home")}
	t.Cleanup(func() {
		if p.commands > 0 {
			t.Logf("create-only: %d commands, %d pre-existing files hashed before and after, %d changes", p.commands, p.compared, p.changed)
		}
	})
	for _, d := range []string{p.dir, p.home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range markers {
		if err := os.MkdirAll(filepath.Join(p.dir, m), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func (p *proj) path(rel string) string { return filepath.Join(p.dir, rel) }

func (p *proj) write(rel, data string) {
	p.t.Helper()
	if err := os.MkdirAll(filepath.Dir(p.path(rel)), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(p.path(rel), []byte(data), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func (p *proj) read(rel string) string {
	p.t.Helper()
	b, err := os.ReadFile(p.path(rel))
	if err != nil {
		p.t.Fatal(err)
	}
	return string(b)
}

func (p *proj) exists(rel string) bool {
	_, err := os.Lstat(p.path(rel))
	return err == nil
}

// hashTree maps every regular file below root (symlinks not followed) to its
// SHA-256, and every symlink to its target.
func hashTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			out[rel] = "symlink:" + target
			return err
		case d.Type().IsRegular():
			b, err := os.ReadFile(path)
			sum := sha256.Sum256(b)
			out[rel] = hex.EncodeToString(sum[:])
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// run executes the binary in the project. Every file that existed before
// the command must be byte-identical afterwards (the ledger file, which
// appends change, is checked separately where nothing may be appended).
func (p *proj) run(args ...string) result {
	p.t.Helper()
	before := hashTree(p.t, p.dir)
	cmd := exec.Command(p.bin, args...)
	cmd.Dir = p.dir
	cmd.Env = []string{"HOME=" + p.home, "PATH=/usr/bin:/bin"}
	r := runCmd(p.t, cmd)
	after := hashTree(p.t, p.dir)
	p.commands++
	for rel, h := range before {
		if rel == filepath.Join(".tree-ring", "ledger.db") {
			continue
		}
		p.compared++
		if after[rel] != h {
			p.changed++
			p.t.Errorf("%v changed pre-existing %s", args, rel)
		}
	}
	return r
}

func (p *proj) ok(args ...string) string {
	p.t.Helper()
	r := p.run(args...)
	if r.code != 0 {
		p.t.Fatalf("%v: exit %d, stderr %s", args, r.code, r.stderr)
	}
	return r.stdout
}

// review runs a command that must leave a harness in needs-user-review:
// exit 5 (docs/exit-codes.md), the report on stdout, one line on stderr.
func (p *proj) review(args ...string) string {
	p.t.Helper()
	r := p.run(args...)
	if r.code != exitReview || !strings.Contains(r.stderr, " user review: Tree Ring changed nothing for ") || strings.Count(r.stderr, "\n") != 1 {
		p.t.Fatalf("%v: exit %d, want %d; stderr %s", args, r.code, exitReview, r.stderr)
	}
	return r.stdout
}

// reviewJSON is review with --json, decoding the report into v.
func (p *proj) reviewJSON(v any, args ...string) {
	p.t.Helper()
	out := p.review(append([]string{"--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		p.t.Fatalf("%v: %v\n%s", args, err, out)
	}
}

func (p *proj) json(v any, args ...string) {
	p.t.Helper()
	out := p.ok(append([]string{"--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		p.t.Fatalf("%v: %v\n%s", args, err, out)
	}
}

type evt struct {
	Stream  string          `json:"stream"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// events returns the domain events; run records (run/ streams, checked by
// runEvents and docs/runs.md) are left out so that each scenario asserts
// exactly what the command did to harnesses and the store.
func (p *proj) events() []evt {
	p.t.Helper()
	var out []evt
	for _, e := range p.allEvents() {
		if !strings.HasPrefix(e.Stream, "run/") {
			out = append(out, e)
		}
	}
	return out
}

// runEvents returns "type command status" for every run record.
func (p *proj) runEvents() []string {
	p.t.Helper()
	var out []string
	for _, e := range p.allEvents() {
		if !strings.HasPrefix(e.Stream, "run/") {
			continue
		}
		var r struct{ Command, Status string }
		_ = json.Unmarshal(e.Payload, &r)
		out = append(out, strings.Join(strings.Fields(e.Type+" "+r.Command+" "+r.Status), " "))
	}
	return out
}

func (p *proj) allEvents() []evt {
	p.t.Helper()
	var out []evt
	for _, line := range strings.Split(strings.TrimSpace(p.ok("events")), "\n") {
		if line == "" {
			continue
		}
		var e evt
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			p.t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func (p *proj) manifest() adapters.Manifest {
	p.t.Helper()
	m, err := adapters.DecodeManifest([]byte(p.read(".tree-ring/activation.json")))
	if err != nil {
		p.t.Fatal(err)
	}
	return m
}

type initOut struct {
	OK           bool   `json:"ok"`
	DryRun       bool   `json:"dry_run"`
	StoreID      string `json:"store_id"`
	Integrations []struct {
		ID           string   `json:"id"`
		Name         string   `json:"name"`
		State        string   `json:"state"`
		Capability   string   `json:"capability"`
		ManagedPaths []string `json:"managed_paths"`
		ChangedPaths []string `json:"changed_paths"`
		NextStep     string   `json:"next_step"`
	} `json:"integrations"`
	AgentAwareness struct {
		CreatedCount  int `json:"created_count"`
		ExistingCount int `json:"existing_count"`
	} `json:"agent_awareness"`
}

func (o initOut) states() map[string]string {
	m := map[string]string{}
	for _, e := range o.Integrations {
		m[e.ID] = e.State
	}
	return m
}

func (o initOut) next(id string) string {
	for _, e := range o.Integrations {
		if e.ID == id {
			return e.NextStep
		}
	}
	return ""
}

type activateOut struct {
	HarnessID    string   `json:"harness_id"`
	State        string   `json:"state"`
	ChangedPaths []string `json:"changed_paths"`
	DryRun       bool     `json:"dry_run"`
	NextStep     string   `json:"next_step"`
}

func ownedPaths(r adapters.Record) (files, blocks []string) {
	for _, f := range r.OwnedFiles {
		files = append(files, f.Path)
	}
	for _, b := range r.ManagedBlocks {
		blocks = append(blocks, b.Path+"#"+b.BlockID)
	}
	return files, blocks
}

func TestInitClaudeCodexPi(t *testing.T) {
	p := newProj(t, ".claude", ".codex", ".pi")
	var out initOut
	p.json(&out, "init")
	// Init prints the state status gives (one rule, activation.Assess):
	// Codex does not trust the project yet.
	want := map[string]string{"agent-zero": "needs-plugin", "claude-code": "configured-awaiting-proof", "codex": "needs-trust", "pi": "needs-trust"}
	if got := out.states(); !maps(got, want) {
		t.Fatalf("states %v, want %v", got, want)
	}
	var st initOut // status entries carry the same id and state
	p.json(&st, "integrations", "status")
	if got := st.states(); !maps(got, want) {
		t.Fatalf("status right after init: %v, init said %v", got, want)
	}
	if !out.OK || out.DryRun || !adapters.ValidStoreID(out.StoreID) || out.AgentAwareness.CreatedCount != 3 {
		t.Fatalf("init report %+v", out)
	}
	m := p.manifest()
	if m.StoreID != out.StoreID {
		t.Fatal("manifest store_id differs from the reported one")
	}
	owned := map[string][2][]string{
		"agent-zero":  {{".tree-ring/activation/agent-zero.json"}, nil},
		"claude-code": {{".claude/skills/tree-ring-memory/SKILL.md"}, {".claude/settings.json#claude-code"}},
		"codex":       {{".agents/skills/tree-ring-memory/SKILL.md", ".codex/hooks.json"}, {"AGENTS.md#codex"}},
		"pi":          {{".agents/skills/tree-ring-memory/SKILL.md", ".pi/extensions/tree-ring-memory.ts"}, nil},
	}
	if len(m.Harnesses) != len(owned) {
		t.Fatalf("manifest harnesses %v", m.Harnesses)
	}
	root, err := adapters.OpenProjectRoot(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for id, w := range owned {
		r := m.Harnesses[id]
		files, blocks := ownedPaths(r)
		// The record states what publication established; trust is the
		// host's live decision, which status reads.
		recorded := map[string]string{"codex": "configured-awaiting-proof"}[id]
		if recorded == "" {
			recorded = want[id]
		}
		if !slices.Equal(files, w[0]) || !slices.Equal(blocks, w[1]) || r.State != recorded {
			t.Errorf("%s record: files %v blocks %v state %s", id, files, blocks, r.State)
		}
		disk, changed, err := adapters.DiskRecord(root, id, r)
		if err != nil || len(changed) > 0 || disk.BridgeFingerprint != r.BridgeFingerprint {
			t.Errorf("%s: fingerprint recomputed from disk %s (changed %v, %v), manifest %s", id, disk.BridgeFingerprint, changed, err, r.BridgeFingerprint)
		}
	}
	// Bridge bytes are the reviewed golden bytes.
	for _, c := range [][2]string{
		{".codex/hooks.json", "codex/bridge/.codex/hooks.json"},
		{"AGENTS.md", "codex/bridge/AGENTS.md"},
		{".claude/settings.json", "claude-code/bridge/.claude/settings.json"},
		{".pi/extensions/tree-ring-memory.ts", "pi/bridge/.pi/extensions/tree-ring-memory.ts"},
		{".agents/skills/tree-ring-memory/SKILL.md", "codex/bridge/.agents/skills/tree-ring-memory/SKILL.md"},
	} {
		want, err := os.ReadFile(filepath.Join("..", "..", "testdata", "adapters", c[1]))
		if err != nil || p.read(c[0]) != string(want) {
			t.Errorf("%s differs from testdata/adapters/%s (%v)", c[0], c[1], err)
		}
	}
	var binding struct {
		StoreID                string `json:"store_id"`
		ProjectRootFingerprint string `json:"project_root_fingerprint"`
	}
	if err := json.Unmarshal([]byte(p.read(".tree-ring/activation/agent-zero.json")), &binding); err != nil ||
		binding.StoreID != out.StoreID || binding.ProjectRootFingerprint != adapters.ProjectRootFingerprint(p.dir) ||
		m.ProjectRootFingerprint != binding.ProjectRootFingerprint {
		t.Fatalf("agent-zero binding %+v: %v", binding, err)
	}
	// The store's fleet signing key: private, and only its public half in
	// the ledger (docs/fleet.md, "Signed histories").
	if fi, err := os.Stat(p.path(".tree-ring/store.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("store key: %v %v", fi, err)
	}
	// The project-local binary is installed 0755 and runs.
	if fi, err := os.Stat(p.path(".tree-ring/bin/tree-ring")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("binary: %v %v", fi, err)
	}
	if v, err := exec.Command(p.path(".tree-ring/bin/tree-ring"), "version").Output(); err != nil || len(v) == 0 {
		t.Fatalf("installed binary does not run: %v", err)
	}
	// Every step is an event; the manifest digest is the file's.
	var types []string
	for _, e := range p.events() {
		types = append(types, e.Stream+" "+e.Type)
	}
	wantTypes := []string{
		"store store.initialized", "store store.key_recorded", "store guidance.recorded", "store program.installed",
		"harness/agent-zero bridge.published",
		"harness/claude-code harness.detected", "harness/claude-code bridge.published",
		"harness/codex harness.detected", "harness/codex bridge.published",
		"harness/pi harness.detected", "harness/pi bridge.published",
		"store manifest.published",
	}
	if !slices.Equal(types, wantTypes) {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(types, "\n"), strings.Join(wantTypes, "\n"))
	}
	// The publishing work is one recorded run; its run.finished shares the
	// transaction of the events above.
	if runs := p.runEvents(); !slices.Equal(runs, []string{"run.started init", "run.finished succeeded"}) {
		t.Fatalf("run records: %q", runs)
	}
	evs := p.events()
	var mp struct{ SHA256 string }
	_ = json.Unmarshal(evs[len(evs)-1].Payload, &mp)
	if mp.SHA256 != adapters.SHA256Hex([]byte(p.read(".tree-ring/activation.json"))) {
		t.Fatal("manifest.published digest is not the file's")
	}
	p.ok("audit", "verify")
}

func maps(a, b map[string]string) bool {
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

func TestRerunChangesNothing(t *testing.T) {
	p := newProj(t, ".claude", ".codex", ".pi")
	p.ok("init")
	before := hashTree(t, p.dir)
	n := len(p.events())
	var again initOut
	p.json(&again, "init")
	for _, e := range again.Integrations {
		if len(e.ChangedPaths) != 0 {
			t.Errorf("second init changed %s: %v", e.ID, e.ChangedPaths)
		}
	}
	for _, h := range []string{"codex", "claude-code", "pi", "agent-zero"} {
		for _, verb := range []string{"activate", "link"} {
			var r activateOut
			p.json(&r, "integrations", verb, "--harness", h)
			if r.ChangedPaths == nil || len(r.ChangedPaths) != 0 || r.DryRun {
				t.Errorf("%s %s: %+v", verb, h, r)
			}
		}
	}
	p.ok("init")
	if after := hashTree(t, p.dir); !maps(before, after) {
		t.Fatal("re-running init/activate/link changed the project (or the ledger file)")
	}
	if got := len(p.events()); got != n {
		t.Fatalf("events %d, want %d", got, n)
	}
}

func TestExistingAgentsMdWithoutMarkers(t *testing.T) {
	p := newProj(t)
	p.write("AGENTS.md", "# Project rules\n\nUse tabs.\n")
	var out initOut
	p.reviewJSON(&out, "init")
	if out.states()["codex"] != "needs-user-review" {
		t.Fatalf("codex %s", out.states()["codex"])
	}
	if p.exists(".codex/hooks.json") || p.exists(".agents/skills/tree-ring-memory/SKILL.md") {
		t.Fatal("codex plan is all-or-nothing, but part of it was written")
	}
	next := out.next("codex")
	block := adapters.MarkdownBlockText("codex", "")
	if !strings.HasPrefix(next, "Tree Ring will not replace or remove an existing codex bridge entry; review and reconcile it before retrying.") ||
		!strings.Contains(next, "tree-ring integrations reconcile --apply --harness codex --accept-managed-block") {
		t.Fatalf("next step:\n%s", next)
	}
	snippet := next[strings.Index(next, "<!-- tree-ring:begin codex"):] + "\n"
	if !strings.HasPrefix(snippet, block[:strings.Index(block, "\n")+1]) {
		t.Fatalf("no block in the next step:\n%s", next)
	}
	manifest := p.read(".tree-ring/activation.json")
	// The user adds the block by hand.
	p.write("AGENTS.md", "# Project rules\n\nUse tabs.\n\n"+snippet)
	var r activateOut
	p.reviewJSON(&r, "integrations", "activate", "--harness", "codex")
	if r.State != "needs-user-review" || !strings.Contains(r.NextStep, "--accept-managed-block") {
		t.Fatalf("adopting a block in the user's file needs the flag: %+v", r)
	}
	// The manifest holds the planned record as needs-user-review; the
	// reconcile publishes it and changes only that state there.
	var rec reconcileOut
	changed := p.applyJSON(&rec, "--harness", "codex", "--accept-managed-block")
	if st, created, _ := rec.entry(t, "codex"); st != "configured-awaiting-proof" || !slices.Equal(created, []string{".agents/skills/tree-ring-memory/SKILL.md", ".codex/hooks.json"}) ||
		!slices.Equal(changed, []string{".tree-ring/activation.json"}) {
		t.Fatalf("after adding the block: %+v, changed %v", rec, changed)
	}
	if p.read(".tree-ring/activation.json") != reviewedToPublished(manifest) {
		t.Fatal("the reconcile changed more than the codex record's state")
	}
	if last := p.lastOf("bridge.published"); !bytes.Contains(last.Payload, []byte(`"recognized":true`)) {
		t.Fatalf("last event %s %s", last.Type, last.Payload)
	}
}

func TestAgentsMdGrownAroundBlockThenEdited(t *testing.T) {
	p := newProj(t, ".codex")
	p.ok("init")
	block := p.read("AGENTS.md")
	p.write("AGENTS.md", "# Team notes\n\nRun make test.\n\n"+block+"\n## More\nKeep PRs small.\n")
	n := len(p.events())
	var r activateOut
	p.json(&r, "integrations", "activate", "--harness", "codex")
	var out initOut
	p.json(&out, "init")
	if r.State != "configured-awaiting-proof" || len(r.ChangedPaths) != 0 || out.states()["codex"] != "needs-trust" || len(p.events()) != n {
		t.Fatalf("text around the block broke activation: %+v %v", r, out.states())
	}
	p.write("AGENTS.md", strings.Replace(p.read("AGENTS.md"), "Capture zero to three", "Capture up to ten", 1))
	edited := p.read("AGENTS.md")
	p.reviewJSON(&r, "integrations", "activate", "--harness", "codex")
	if r.State != "needs-user-review" || !strings.Contains(r.NextStep, "<!-- tree-ring:begin codex v1 -->") {
		t.Fatalf("edited block: %+v", r)
	}
	if p.read("AGENTS.md") != edited {
		t.Fatal("AGENTS.md was rewritten")
	}
	evs := p.events()
	if last := evs[len(evs)-1]; last.Type != "bridge.drift_detected" || !bytes.Contains(last.Payload, []byte("managed_block_changed")) {
		t.Fatalf("last event %s %s", last.Type, last.Payload)
	}
	n = len(evs)
	p.review("init")
	if len(p.events()) != n {
		t.Fatal("an unchanged review was recorded twice")
	}
	// Restoring the block exactly resolves the review.
	p.write("AGENTS.md", "# Team notes\n\n"+block)
	p.json(&r, "integrations", "activate", "--harness", "codex")
	if r.State != "configured-awaiting-proof" {
		t.Fatalf("restored block: %+v", r)
	}
}

func TestClaudeSettingsWithUserHooks(t *testing.T) {
	p := newProj(t)
	user := "{\n  \"permissions\": {\"allow\": [\"Bash(make test)\"]},\n  \"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify-send done\"}]}]}\n}\n"
	p.write(".claude/settings.json", user)
	var out initOut
	p.reviewJSON(&out, "init")
	if out.states()["claude-code"] != "needs-user-review" || p.exists(".claude/skills") {
		t.Fatalf("claude-code %s", out.states()["claude-code"])
	}
	next := out.next("claude-code")
	snippet := string(adapters.ClaudeSettingsSnippet())
	if !strings.HasPrefix(next, "Tree Ring will not replace or remove an existing claude-code bridge entry;") || !strings.HasSuffix(next, "\n"+strings.TrimSuffix(snippet, "\n")) {
		t.Fatalf("next step does not end with the exact snippet:\n%s", next)
	}
	manifest := p.read(".tree-ring/activation.json")
	// The user merges the snippet by hand.
	var doc map[string]any
	_ = json.Unmarshal([]byte(user), &doc)
	var snip struct{ Hooks map[string][]any }
	_ = json.Unmarshal([]byte(next[strings.Index(next, "\n{")+1:]), &snip)
	hooks := doc["hooks"].(map[string]any)
	for ev, entries := range snip.Hooks {
		prev, _ := hooks[ev].([]any)
		hooks[ev] = append(prev, entries...)
	}
	merged, _ := json.MarshalIndent(doc, "", "\t")
	p.write(".claude/settings.json", string(merged))
	if !strings.Contains(next, "then run `tree-ring integrations reconcile --apply --harness claude-code`") {
		t.Fatalf("the retry is not the reconcile:\n%s", next)
	}
	var rec reconcileOut
	changed := p.applyJSON(&rec, "--harness", "claude-code")
	if st, created, _ := rec.entry(t, "claude-code"); st != "configured-awaiting-proof" || !slices.Equal(created, []string{".claude/skills/tree-ring-memory/SKILL.md"}) ||
		!slices.Equal(changed, []string{".tree-ring/activation.json"}) {
		t.Fatalf("after merging: %+v, changed %v", rec, changed)
	}
	if p.read(".claude/settings.json") != string(merged) || p.read(".tree-ring/activation.json") != reviewedToPublished(manifest) {
		t.Fatal("settings rewritten, or the manifest changed beyond the record's state")
	}
	if last := p.lastOf("bridge.published"); last.Type != "bridge.published" || !bytes.Contains(last.Payload, []byte(`"recognized":true`)) || !bytes.Contains(last.Payload, []byte(`"from":"needs-user-review","to":"configured-awaiting-proof"`)) {
		t.Fatalf("last event %s %s", last.Type, last.Payload)
	}
}

func TestClaudeSettingsMalformedIsNeverRewritten(t *testing.T) {
	p := newProj(t)
	p.write(".claude/settings.json", "{\"hooks\": {\"Stop\": [}\n")
	var out initOut
	p.reviewJSON(&out, "init")
	if out.states()["claude-code"] != "needs-user-review" || !strings.Contains(out.next("claude-code"), "malformed") {
		t.Fatalf("%v\n%s", out.states(), out.next("claude-code"))
	}
	evs := p.events()
	found := false
	for _, e := range evs {
		found = found || e.Type == "publication.review_required" && bytes.Contains(e.Payload, []byte("existing_file_malformed"))
	}
	if !found {
		t.Fatal("no review with reason existing_file_malformed")
	}
}

func TestRootSpellingsAreEquivalent(t *testing.T) {
	p := newProj(t, ".codex", ".claude")
	p.ok("init")
	ledger := p.read(".tree-ring/ledger.db")
	n := len(p.events())
	for _, root := range []string{".tree-ring", "./.tree-ring", ".tree-ring/", p.path(".tree-ring")} {
		var r activateOut
		p.json(&r, "--root", root, "integrations", "link", "--harness", "codex")
		var out initOut
		p.json(&out, "--root", root, "init")
		p.json(&r, "--root", root, "--source-root", p.dir, "integrations", "activate", "--harness", "claude-code")
		if r.State != "configured-awaiting-proof" || len(r.ChangedPaths) != 0 || out.StoreID == "" {
			t.Fatalf("--root %s: %+v", root, r)
		}
	}
	if len(p.events()) != n || p.read(".tree-ring/ledger.db") != ledger {
		t.Fatal("an equivalent root spelling appended or rewrote the ledger")
	}
	// Fresh projects initialized through each spelling publish the same bridges.
	var ref map[string]string
	for _, root := range []string{".tree-ring", "./.tree-ring", ".tree-ring/", "ABS"} {
		q := newProj(t, ".codex")
		if root == "ABS" {
			root = q.path(".tree-ring")
		}
		q.ok("--root", root, "init")
		files := hashTree(t, q.dir)
		for k := range files {
			if strings.HasPrefix(k, ".tree-ring") {
				delete(files, k)
			}
		}
		if ref == nil {
			ref = files
		} else if !maps(ref, files) {
			t.Fatalf("--root %s published different bridges", root)
		}
	}
	// A different store is refused and nothing is created.
	other := filepath.Join(filepath.Dir(p.dir), "other")
	for _, root := range []string{filepath.Join(other, ".tree-ring"), p.path("store"), p.path("sub/.tree-ring")} {
		r := p.run("--root", root, "integrations", "activate", "--harness", "codex")
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "store") {
			t.Fatalf("--root %s: exit %d, out %q, err %q", root, r.code, r.stdout, r.stderr)
		}
	}
	if _, err := os.Stat(other); err == nil || p.exists("store") || p.exists("sub") {
		t.Fatal("a refused root was created")
	}
}

func TestDeactivateRemovesNothing(t *testing.T) {
	p := newProj(t, ".codex")
	p.ok("init")
	before := hashTree(t, p.dir)
	n := len(p.events())
	var r activateOut
	p.json(&r, "integrations", "deactivate", "--harness", "codex", "--dry-run")
	if r.State != "needs-user-review" || !r.DryRun || len(p.events()) != n {
		t.Fatalf("dry run: %+v (%d events)", r, len(p.events()))
	}
	p.json(&r, "integrations", "deactivate", "--harness", "codex")
	if r.State != "needs-user-review" || !strings.Contains(r.NextStep, "remove by hand (Tree Ring never edits your files): the Tree Ring block in AGENTS.md. Then run `tree-ring integrations reconcile --harness codex --apply`: it removes the files Tree Ring created while they hold the bytes it published (.agents/skills/tree-ring-memory/SKILL.md, .codex/hooks.json)") {
		t.Fatalf("deactivate: %+v", r)
	}
	after := hashTree(t, p.dir)
	for rel, h := range before {
		if after[rel] != h && rel != filepath.Join(".tree-ring", "ledger.db") {
			t.Errorf("deactivate changed or removed %s", rel)
		}
	}
	evs := p.events()
	if last := evs[len(evs)-1]; last.Type != "harness.deactivation_requested" || !bytes.Contains(last.Payload, []byte(`"from":"configured-awaiting-proof","to":"needs-user-review"`)) {
		t.Fatalf("last event %s %s", last.Type, last.Payload)
	}
	n = len(evs)
	p.ok("integrations", "deactivate", "--harness", "codex")
	var out initOut
	p.reviewJSON(&out, "init")
	if len(p.events()) != n || out.states()["codex"] != "needs-user-review" {
		t.Fatalf("a deactivation request must stick through init (%v)", out.states())
	}
	p.json(&r, "integrations", "activate", "--harness", "codex")
	if r.State != "configured-awaiting-proof" {
		t.Fatalf("re-activate: %+v", r)
	}
}

func TestSymlinkedTargetsRefused(t *testing.T) {
	p := newProj(t)
	outside := filepath.Join(filepath.Dir(p.dir), "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, p.path(".claude")); err != nil {
		t.Fatal(err)
	}
	p.write("target.json", "{}\n")
	if err := os.MkdirAll(p.path(".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(p.path("target.json"), p.path(".codex/hooks.json")); err != nil {
		t.Fatal(err)
	}
	var out initOut
	p.reviewJSON(&out, "init")
	if s := out.states(); s["claude-code"] != "needs-user-review" || s["codex"] != "needs-user-review" {
		t.Fatalf("states %v", s)
	}
	if !strings.Contains(out.next("claude-code"), ".claude is a symlink") || !strings.Contains(out.next("codex"), ".codex/hooks.json is a symlink") {
		t.Fatalf("next steps:\n%s\n%s", out.next("claude-code"), out.next("codex"))
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 || p.read("target.json") != "{}\n" || p.exists("AGENTS.md") {
		t.Fatal("something was written through a symlink or a blocked plan was partly published")
	}
	var r activateOut
	p.reviewJSON(&r, "integrations", "activate", "--harness", "claude-code")
	if r.State != "needs-user-review" {
		t.Fatalf("activate through a symlink: %+v", r)
	}
	// A symlinked store root is refused outright.
	q := newProj(t, ".codex")
	if err := os.Mkdir(filepath.Join(filepath.Dir(q.dir), "store"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(filepath.Dir(q.dir), "store"), q.path(".tree-ring")); err != nil {
		t.Fatal(err)
	}
	if res := q.run("init"); res.code != 2 || !strings.Contains(res.stderr, "symlink") || q.exists("AGENTS.md") {
		t.Fatalf("symlinked store: %+v", res)
	}
}

func TestDryRunsCreateNothing(t *testing.T) {
	p := newProj(t, ".codex", ".claude")
	var out struct {
		OK           bool          `json:"ok"`
		DryRun       bool          `json:"dry_run"`
		Integrations []activateOut `json:"integrations"`
	}
	p.json(&out, "init", "--dry-run")
	var r activateOut
	p.json(&r, "integrations", "activate", "--harness", "codex", "--dry-run")
	human := p.ok("integrations", "activate", "--harness", "pi", "--dry-run")
	if p.exists(".tree-ring") || p.exists("AGENTS.md") {
		t.Fatal("a dry run created something")
	}
	if !out.OK || !out.DryRun || len(out.Integrations) != 3 || !r.DryRun || r.State != "configured-awaiting-proof" ||
		r.NextStep != "Apply the reviewed bridge plan, then complete adapter-specific preflight and receipt verification." ||
		!slices.Equal(r.ChangedPaths, []string{".agents/skills/tree-ring-memory/SKILL.md", ".codex/hooks.json", "AGENTS.md"}) {
		t.Fatalf("dry run reports: %+v %+v", out, r)
	}
	if !strings.HasPrefix(human, "pi: needs-trust (dry-run)\n") || !strings.Contains(human, "  next: Apply the reviewed bridge plan") {
		t.Fatalf("human dry run:\n%s", human)
	}
	if res := p.run("integrations", "activate", "--harness", "codex"); res.code != 2 || !strings.Contains(res.stderr, "run `tree-ring init` first") || p.exists(".tree-ring") {
		t.Fatalf("activate without a store: %+v", res)
	}
	// With a store, a dry run reads it and appends nothing.
	p.ok("init")
	ledger := p.read(".tree-ring/ledger.db")
	p.ok("init", "--dry-run")
	p.ok("integrations", "deactivate", "--harness", "codex", "--dry-run")
	if p.read(".tree-ring/ledger.db") != ledger {
		t.Fatal("a dry run wrote the ledger")
	}
}

func TestHumanOutput(t *testing.T) {
	p := newProj(t, ".codex")
	got := p.ok("init")
	// Init says what status says right after it (Codex's trust step, read
	// live).
	want := "Tree Ring Memory initialized.\n" + p.ok("integrations", "status")
	if got != want || !strings.Contains(got, "Codex: needs-trust\n") {
		t.Fatalf("init:\n%s\nwant:\n%s", got, want)
	}
	got = p.ok("integrations", "link", "--harness", "codex")
	want = "codex: configured-awaiting-proof\n  next: Open a new Codex session so its preflight runs, then check `tree-ring integrations status --verbose` for the receipt. Until Codex trusts this folder it skips the project's hooks. " + codexAdapter(t).TrustStep(adapters.TrustUnknown) + "\n"
	if got != want {
		t.Fatalf("link:\n%s\nwant:\n%s", got, want)
	}
	before := p.read(".tree-ring/ledger.db")
	if r := p.run("integrations", "activate", "--harness", "hermes"); r.code != 2 || r.stdout != "" ||
		r.stderr != "tree-ring: hermes is guidance-only: Tree Ring publishes no bridge for it and it never becomes active; nothing was written. "+hermes().NativeGap+"\n" {
		t.Fatalf("hermes: %+v", r)
	}
	if p.read(".tree-ring/ledger.db") != before {
		t.Fatal("a refused activate wrote the ledger")
	}
	if r := p.run("integrations", "activate", "--harness", "no-such-harness"); r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "not a registered adapter") {
		t.Fatalf("unknown harness: %+v", r)
	}
}

func hermes() *adapters.Adapter {
	a, _ := adapters.Lookup("hermes")
	return a
}

func TestScan(t *testing.T) {
	p := newProj(t, ".claude", ".a0", ".hermes", ".cursor", ".kiro", ".devin")
	p.write("crush.json", "{}")
	if err := os.Mkdir(filepath.Join(p.home, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out struct {
		OK            bool `json:"ok"`
		DetectedCount int  `json:"detected_count"`
		Integrations  []struct {
			HarnessID string            `json:"harness_id"`
			Status    string            `json:"status"`
			Markers   []adapters.Marker `json:"markers"`
		} `json:"integrations"`
	}
	p.json(&out, "integrations", "scan")
	got := map[string]string{}
	for _, e := range out.Integrations {
		got[e.HarnessID] = e.Status
		if e.HarnessID == "codex" && (len(e.Markers) != 1 || e.Markers[0] != (adapters.Marker{Path: "~/.codex", Origin: "home"})) {
			t.Errorf("codex markers %v", e.Markers)
		}
	}
	// Every registered harness is listed, detected or not.
	want := map[string]string{}
	for _, id := range adapters.IDs() {
		want[id] = "available"
	}
	for _, id := range []string{"claude-code", "codex", "hermes", "cursor", "kiro-cli", "devin-cli", "crush"} {
		want[id] = "detected"
	}
	if !out.OK || out.DetectedCount != 7 || !maps(got, want) {
		t.Fatalf("scan %+v", out)
	}
	if p.exists(".tree-ring") {
		t.Fatal("scan created the store")
	}
}

// TestReactivationSettlesPiAndAgentZero: from needs-user-review the table
// has require_plugin but no require_trust, so agent-zero settles in one
// event and pi publishes first, then records that trust is required.
func TestReactivationSettlesPiAndAgentZero(t *testing.T) {
	p := newProj(t, ".pi")
	p.ok("init")
	for id, want := range map[string][]string{
		"pi":         {"bridge.published unsupported>needs-trust", "harness.deactivation_requested needs-trust>needs-user-review", "bridge.published needs-user-review>configured-awaiting-proof", "harness.trust_required configured-awaiting-proof>needs-trust"},
		"agent-zero": {"bridge.published unsupported>needs-plugin", "harness.deactivation_requested needs-plugin>needs-user-review", "bridge.published needs-user-review>needs-plugin"},
	} {
		p.ok("integrations", "deactivate", "--harness", id)
		var r activateOut
		p.json(&r, "integrations", "activate", "--harness", id)
		if len(r.ChangedPaths) != 0 {
			t.Fatalf("%s re-activation created %v", id, r.ChangedPaths)
		}
		var got []string
		for _, e := range p.events() {
			if e.Stream != "harness/"+id || e.Type == "harness.detected" {
				continue
			}
			var tr struct{ From, To string }
			_ = json.Unmarshal(e.Payload, &tr)
			got = append(got, e.Type+" "+tr.From+">"+tr.To)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s:\n%s\nwant\n%s", id, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	p.ok("audit", "verify")
}

// TestManifestIsCreateOnly: an existing manifest that would need another
// record (a harness added after init, or a manifest of another store) is
// never rewritten; the harness's whole plan waits, and moving the file
// aside lets Tree Ring publish it again from the ledger.
func TestManifestIsCreateOnly(t *testing.T) {
	p := newProj(t, ".codex")
	p.ok("init")
	manifest := p.read(".tree-ring/activation.json")
	if err := os.Mkdir(p.path(".pi"), 0o755); err != nil {
		t.Fatal(err)
	}
	var r activateOut
	p.reviewJSON(&r, "integrations", "activate", "--harness", "pi")
	if r.State != "needs-user-review" || !strings.Contains(r.NextStep, ".tree-ring/activation.json already exists") || p.exists(".pi/extensions") {
		t.Fatalf("pi after init: %+v", r)
	}
	if p.read(".tree-ring/activation.json") != manifest {
		t.Fatal("manifest rewritten")
	}
	if err := os.Rename(p.path(".tree-ring/activation.json"), p.path("activation.json.reviewed")); err != nil {
		t.Fatal(err)
	}
	p.json(&r, "integrations", "activate", "--harness", "pi")
	if r.State != "needs-trust" || !slices.Contains(r.ChangedPaths, ".pi/extensions/tree-ring-memory.ts") {
		t.Fatalf("pi after moving the manifest aside: %+v", r)
	}
	m := p.manifest()
	if _, ok := m.Harnesses["pi"]; !ok || len(m.Harnesses) != 3 {
		t.Fatalf("re-published manifest %v", m.Harnesses)
	}

	// A manifest copied in from another project (another root) without a
	// ledger is not adopted (adopt_test.go adopts this project's own):
	// init refuses, creates no ledger with another store id and publishes
	// nothing.
	q := newProj(t, ".codex")
	foreign := strings.Replace(string(m.Encode()), m.StoreID, "11111111-2222-4333-8444-555555555555", 1)
	q.write(".tree-ring/activation.json", foreign)
	if r := q.run("init"); r.code != 2 || !strings.Contains(r.stderr, "cannot adopt .tree-ring/activation.json: it names another project root") {
		t.Fatalf("init under a foreign manifest without its ledger: %+v", r)
	}
	if q.exists("AGENTS.md") || q.exists(".codex/hooks.json") || q.exists(".tree-ring/ledger.db") || q.read(".tree-ring/activation.json") != foreign {
		t.Fatal("published under a manifest without its ledger")
	}

	// A manifest of another store beside this store's ledger blocks every
	// plan that needs a record in it.
	w := newProj(t, ".codex")
	w.ok("init")
	wm := w.manifest()
	foreign = strings.Replace(string(wm.Encode()), wm.StoreID, "11111111-2222-4333-8444-555555555555", 1)
	w.write(".tree-ring/activation.json", foreign)
	var out initOut
	w.reviewJSON(&out, "init")
	for id, s := range out.states() {
		if s != "needs-user-review" {
			t.Errorf("%s %s under a foreign manifest", id, s)
		}
	}
	if w.read(".tree-ring/activation.json") != foreign {
		t.Fatal("a foreign manifest was replaced")
	}
}

func codexAdapter(t *testing.T) *adapters.Adapter {
	t.Helper()
	a, ok := adapters.Lookup("codex")
	if !ok {
		t.Fatal("no codex adapter")
	}
	return a
}
