package acceptance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCodexMergedHooks: a project that already has a .codex/hooks.json of
// its own (one Stop hook). init leaves it alone and exits 5 with the exact
// groups to merge; the user merges them after their own and runs the
// printed retry; status prints the config.toml trust lines for the groups
// where they sit (Stop is the second group), which must be Codex's own
// keys and hashes (hooks/list); with those lines the real Codex runs our
// hook, the brief reaches the model and status turns active.
func TestCodexMergedHooks(t *testing.T) {
	requireAcceptance(t)
	c := codexCLI
	s := step{t, c.String() + " (merged hooks)"}
	codex := install(t, c)
	p := newBareProject(t, s, ".codex")
	root := p.root()
	hooksFile := filepath.Join(root, ".codex", "hooks.json")
	user := `{"description": "the user's hooks", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true", "timeout": 5}]}]}}` + "\n"
	writeFile(t, hooksFile, user)

	out, errs, code := p.run(p.dir, time.Minute, p.env(), "", p.bin, "--json", "init")
	if code != 5 || !strings.Contains(errs, "codex (.codex/hooks.json) needs user review") {
		s.fatalf("init review", "exit %d, want 5: %s%s", code, out, errs)
	}
	p.tr("remember", "remember", p.memory, "--event-type", "decision", "--project", p.name)
	var in struct {
		Integrations []integration `json:"integrations"`
	}
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatal(err)
	}
	next := ""
	for _, e := range in.Integrations {
		if e.ID == "codex" && e.State == "needs-user-review" {
			next = e.NextStep
		}
	}
	const lead = "keeping your own), then run `tree-ring integrations reconcile --apply --harness codex`:\n"
	i := strings.Index(next, lead)
	if i < 0 {
		s.fatalf("init review", "no snippet to merge in the next step: %s", next)
	}
	var doc, snip map[string]any
	if err := json.Unmarshal([]byte(next[i+len(lead):]), &snip); err != nil {
		s.fatalf("init review", "the snippet is not JSON: %v", err)
	}
	if err := json.Unmarshal([]byte(user), &doc); err != nil {
		t.Fatal(err)
	}
	hooks := doc["hooks"].(map[string]any)
	for ev, groups := range snip["hooks"].(map[string]any) {
		have, _ := hooks[ev].([]any)
		hooks[ev] = append(have, groups.([]any)...)
	}
	merged, _ := json.MarshalIndent(doc, "", "  ")
	writeFile(t, hooksFile, string(merged)+"\n")
	p.tr("retry", "integrations", "reconcile", "--apply", "--harness", "codex")

	m := NewMock(func(*Request) Reply { return Reply{Text: mainDone} })
	defer m.Close()
	codexHome := filepath.Join(p.home, ".codex")
	config := filepath.Join(codexHome, "config.toml")
	writeFile(t, config, codexConfig(m.URL(), root, nil))
	env := p.env("CODEX_HOME="+codexHome, "MOCK_API_KEY=dummy")
	var st struct {
		Integrations []integration `json:"integrations"`
	}
	out, errs, code = p.run(p.dir, time.Minute, env, "", p.bin, "--json", "integrations", "status")
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		s.fatalf("trust status", "exit %d: %s%s", code, out, errs)
	}
	lines := ""
	for _, e := range st.Integrations {
		if e.ID == "codex" {
			const from, to = "(default `~/.codex/config.toml`):\n", "\nThen open a new Codex session."
			if e.State != "needs-trust" || !strings.Contains(e.NextStep, from) {
				s.fatalf("trust status", "codex is %s: %s", e.State, e.NextStep)
			}
			lines = e.NextStep[strings.Index(e.NextStep, from)+len(from) : strings.LastIndex(e.NextStep, to)]
		}
	}
	// Our keys and hashes are Codex's own for the merged groups.
	theirs := codexListHooks(t, s, codex, root, env)
	for k, h := range theirs {
		if strings.HasSuffix(k, ":stop:0:0") {
			continue // the user's own hook
		}
		if !strings.Contains(lines, `[hooks.state."`+k+`"]`+"\ntrusted_hash = \""+h+`"`) {
			s.fatalf("hook trust hash", "Codex lists %s %s, status printed:\n%s", k, h, lines)
		}
	}
	if len(theirs) != 5 || !strings.Contains(lines, ":stop:1:0") {
		s.fatalf("hook trust hash", "hooks/list shows %d hooks (want the user's and our 4): %v", len(theirs), theirs)
	}
	writeFile(t, config, codexConfig(m.URL(), root, nil)+"\n"+lines+"\n")
	if st := p.stateIn("codex", env); st != "configured-awaiting-proof" {
		s.fatalf("trust status", "codex is %s with the printed lines, want configured-awaiting-proof", st)
	}

	_, errs, code = p.run(p.dir, 2*time.Minute, env, "", codex, "exec", "--json", "hello")
	if code != 0 {
		s.fatalf("headless run", "exit %d: %s", code, tailS(errs, 10))
	}
	if !anyRequest(m.Requests(), func(r *Request) bool { return r.Contains(p.memory) }) || len(p.receipts("codex")) == 0 {
		s.fatalf("hook ran", "the brief never reached the model (receipts %d)", len(p.receipts("codex")))
	}
	if st := p.stateIn("codex", env); st != "active" {
		s.fatalf("status after the session", "codex is %s, want active", st)
	}
	if b, _ := os.ReadFile(hooksFile); string(b) != string(merged)+"\n" {
		s.fatalf("create-only", "the user's merged hooks.json changed")
	}
}

// integration is one harness of init's or status's JSON report.
type integration struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	NextStep string `json:"next_step"`
}
