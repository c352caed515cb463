package acceptance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters"
)

// codexHookHashes is Codex 0.169's trusted_hash of each hook in hooksFile
// as status computes it (adapters.CodexHookHashes), checked against the
// client's own hooks/list in TestCodex.
func codexHookHashes(t *testing.T, hooksFile string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(hooksFile)
	if err != nil {
		t.Fatal(err)
	}
	h, err := adapters.CodexHookHashes(hooksFile, b)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// trustCodex writes $HOME/.codex/config.toml with both of Codex's trust
// layers for p (status reads it as Codex does), checking that status says
// needs-trust before, with project trust only, and configured-awaiting-proof
// after.
func (p *project) trustCodex(mockURL string) {
	p.t.Helper()
	root := p.root()
	if st := p.state("codex"); st != "needs-trust" {
		p.s.fatalf("trust status", "codex is %s before its trust is written, want needs-trust", st)
	}
	writeFile(p.t, filepath.Join(p.home, ".codex", "config.toml"), codexConfig(mockURL, root, nil))
	if st := p.state("codex"); st != "needs-trust" {
		p.s.fatalf("trust status", "codex is %s with project trust only, want needs-trust", st)
	}
	writeFile(p.t, filepath.Join(p.home, ".codex", "config.toml"),
		codexConfig(mockURL, root, codexHookHashes(p.t, filepath.Join(root, ".codex", "hooks.json"))))
	if st := p.state("codex"); st != "configured-awaiting-proof" {
		p.s.fatalf("trust status", "codex is %s with both trust layers, want configured-awaiting-proof", st)
	}
}

// codexListHooks asks the client's app-server (JSON-RPC over stdio) for
// hooks/list in dir: each hook's key and currentHash as Codex computes it.
func codexListHooks(t *testing.T, s step, codex, dir string, env []string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "app-server")
	cmd.Dir, cmd.Env = dir, env
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		s.fatalf("hook trust", "codex app-server: %v", err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	dirJSON, _ := json.Marshal(dir)
	fmt.Fprint(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"tree-ring-acceptance","version":"0"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"hooks/list","params":{"cwds":[`+string(dirJSON)+`]}}`+"\n")
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var msg struct {
			ID     *int `json:"id"`
			Result struct {
				Data []struct {
					Hooks []struct {
						Key, CurrentHash string
					} `json:"hooks"`
				} `json:"data"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.ID == nil || *msg.ID != 2 {
			continue
		}
		if msg.Error != nil {
			s.fatalf("hook trust", "hooks/list: %s", msg.Error)
		}
		out := map[string]string{}
		for _, d := range msg.Result.Data {
			for _, h := range d.Hooks {
				out[h.Key] = h.CurrentHash
			}
		}
		return out
	}
	s.fatalf("hook trust", "codex app-server gave no hooks/list answer: %v", sc.Err())
	return nil
}

// codexConfig is $CODEX_HOME/config.toml: the mock provider, project trust
// when root is not "", and per-hook trust for each of hashes.
func codexConfig(mockURL, root string, hashes map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "model = \"mock-model\"\nmodel_provider = \"mock\"\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n\n")
	fmt.Fprintf(&b, "[model_providers.mock]\nname = \"mock\"\nbase_url = %s\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n\n", strconv.Quote(mockURL+"/v1"))
	if root != "" {
		fmt.Fprintf(&b, "[projects.%s]\ntrust_level = \"trusted\"\n", strconv.Quote(root))
	}
	keys := make([]string, 0, len(hashes))
	for k := range hashes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "\n[hooks.state.%s]\ntrusted_hash = %s\n", strconv.Quote(k), strconv.Quote(hashes[k]))
	}
	return b.String()
}

func TestCodex(t *testing.T) {
	requireAcceptance(t)
	c := codexCLI
	s := step{t, c.String()}
	codex := install(t, c)
	p := newProject(t, s, ".codex")
	root := p.root()
	canary := "CANARY-cx-8d21e9b7-never-store"
	mainPrompt := "Review accproj and report. " + canary
	var bad string
	isMain := func(r *Request) bool { return r.Contains(canary) }
	m := NewMock(agentScript(isMain,
		func() ToolCall {
			return ToolCall{Name: "spawn_agent", Namespace: "multi_agent_v1", Input: map[string]any{"message": subagentTask}}
		},
		codexWait,
		func(line string) ToolCall {
			return ToolCall{Name: "exec_command", Input: map[string]any{"cmd": line}}
		}, &bad))
	defer m.Close()

	codexHome := filepath.Join(p.home, ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	env := p.env("CODEX_HOME="+codexHome, "MOCK_API_KEY=dummy")
	config := filepath.Join(codexHome, "config.toml")
	// Project trust first; then check our hook hashes against the client's.
	if st := p.state("codex"); st != "needs-trust" {
		s.fatalf("trust status", "codex is %s without a Codex config, want needs-trust", st)
	}
	if err := os.WriteFile(config, []byte(codexConfig(m.URL(), root, nil)), 0o600); err != nil {
		t.Fatal(err)
	}
	if st := p.state("codex"); st != "needs-trust" {
		s.fatalf("trust status", "codex is %s with project trust only, want needs-trust", st)
	}
	ours := codexHookHashes(t, filepath.Join(root, ".codex", "hooks.json"))
	theirs := codexListHooks(t, s, codex, root, env)
	if len(theirs) != 4 {
		s.fatalf("bridge loads", "hooks/list shows %d hooks, want 4: %v", len(theirs), theirs)
	}
	for k, h := range theirs {
		if ours[k] != h {
			s.fatalf("hook trust hash", "%s: Codex's currentHash %s, our formula %s (docs/acceptance.md)", k, h, ours[k])
		}
	}
	if err := os.WriteFile(config, []byte(codexConfig(m.URL(), root, ours)), 0o600); err != nil {
		t.Fatal(err)
	}
	if st := p.state("codex"); st != "configured-awaiting-proof" {
		s.fatalf("trust status", "codex is %s with both trust layers, want configured-awaiting-proof", st)
	}

	out, errs, code := p.run(p.dir, 4*time.Minute, env, "", codex, "exec", "--json", mainPrompt)
	reqs := m.Requests()
	t.Logf("%s: %d model requests", c, len(reqs))
	if code != 0 {
		s.fatalf("headless run", "exit %d\nstdout %s\nstderr %s", code, tailS(out, 30), tailS(errs, 30))
	}
	if bad != "" {
		s.fatalf("Stop reason", "the model found no first capture line in:\n%s", bad)
	}
	if strings.Contains(errs, "Untrusted") {
		s.fatalf("bridge loads", "codex reports untrusted configuration: %s", errs)
	}
	p.checkAgentSession(s, "codex", "exec_command", reqs, isMain, canary)
}

func tailS(s string, n int) string { return tail([]byte(s), n) }

var spawnedID = regexp.MustCompile(`"agent_id":"([^"]+)"`)

// codexWait: spawn_agent returns at once with the child's id; the parent
// waits for it once (wait_agent in the same namespace) before finishing, so
// the child's hooks run inside the headless session.
func codexWait(r *Request) *ToolCall {
	if bytes.Contains(r.Body, []byte(`"wait_agent"`)) && bytes.Contains(r.Body, []byte(`\"targets\"`)) {
		return nil
	}
	m := spawnedID.FindStringSubmatch(r.Text())
	if m == nil {
		return nil
	}
	return &ToolCall{Name: "wait_agent", Namespace: "multi_agent_v1", Input: map[string]any{"targets": []any{m[1]}, "timeout_ms": 120000}}
}

// TestCodexTrustGates pins the two trust layers issue 12's needs-trust
// detection relies on: without project trust, or with project trust but
// no per-hook trust, `codex exec` runs no project hook (the brief never
// reaches the model and no receipt is written); the hook-trust bypass flag
// works together with project trust; project trust is by the exact root.
// After each run, status says what the settings say: needs-trust unless
// both layers hold (the bypass flag trusts nothing for the next session).
func TestCodexTrustGates(t *testing.T) {
	requireAcceptance(t)
	c := codexCLI
	codex := install(t, c)
	for _, g := range []struct {
		name        string
		project     bool
		parent      bool // project trust on the parent directory instead
		hookTrust   bool
		args        []string
		wantHooks   bool
		wantWarning string
	}{
		{name: "untrusted project", wantWarning: "Untrusted"},
		{name: "untrusted project, --dangerously-bypass-hook-trust", args: []string{"--dangerously-bypass-hook-trust"}, wantWarning: "Untrusted"},
		{name: "trusted project, untrusted hooks", project: true},
		{name: "trusted project, --dangerously-bypass-hook-trust", project: true, args: []string{"--dangerously-bypass-hook-trust"}, wantHooks: true},
		{name: "trusted project and hooks", project: true, hookTrust: true, wantHooks: true},
		// Project trust is by the exact root: a trusted parent directory
		// does not count (status reads the exact key too).
		{name: "trusted parent directory and hooks", project: true, parent: true, hookTrust: true},
	} {
		t.Run(g.name, func(t *testing.T) {
			s := step{t, c.String() + " (" + g.name + ")"}
			p := newProject(t, s, ".codex")
			root := p.root()
			m := NewMock(func(*Request) Reply { return Reply{Text: mainDone} })
			defer m.Close()
			var hashes map[string]string
			if g.hookTrust {
				hashes = codexHookHashes(t, filepath.Join(root, ".codex", "hooks.json"))
			}
			trusted := ""
			if g.project {
				trusted = root
			}
			if g.parent {
				trusted = filepath.Dir(root)
			}
			home := filepath.Join(p.home, ".codex")
			writeFile(t, filepath.Join(home, "config.toml"), codexConfig(m.URL(), trusted, hashes))
			args := append([]string{"exec", "--json"}, g.args...)
			_, errs, code := p.run(p.dir, 2*time.Minute, p.env("CODEX_HOME="+home, "MOCK_API_KEY=dummy"), "", codex, append(args, "hello")...)
			if code != 0 {
				s.fatalf("headless run", "exit %d: %s", code, tailS(errs, 10))
			}
			ran := anyRequest(m.Requests(), func(r *Request) bool { return r.Contains(p.memory) })
			if ran != g.wantHooks || len(p.receipts("codex")) > 0 != g.wantHooks {
				s.fatalf("trust gate", "hooks ran: %v (receipts %d), want %v", ran, len(p.receipts("codex")), g.wantHooks)
			}
			if g.wantWarning != "" && !strings.Contains(errs, g.wantWarning) {
				s.fatalf("trust gate", "stderr lacks %q: %s", g.wantWarning, tailS(errs, 10))
			}
			// Status reads the settings, not the flags of one run: the
			// bypass flag trusts nothing for the next session.
			want := "needs-trust"
			if g.wantHooks && g.hookTrust {
				want = "active"
			}
			if st := p.state("codex"); st != want {
				s.fatalf("trust status", "status says %s, want %s", st, want)
			}
		})
	}
}
