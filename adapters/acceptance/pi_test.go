package acceptance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPi(t *testing.T) {
	for _, c := range []npmClient{pi073, pi16} {
		t.Run(c.Version, func(t *testing.T) { testPi(t, c) })
	}
}

// testPi: Pi loads the project extension (0.73 with no trust gate; 1.x
// after the project is trusted in $HOME/.pi/agent/trust.json), the
// extension's preflight context reaches the model, status turns active and
// the audit verifies; with a tree-ring program that exits before reading
// its stdin, Pi still answers, without memory.
func testPi(t *testing.T, c npmClient) {
	requireAcceptance(t)
	s := step{t, c.String()}
	pi := install(t, c)
	path := os.Getenv("PATH")
	if c.Node != nil {
		path = filepath.Dir(install(t, *c.Node)) + string(os.PathListSeparator) + path
	}
	p := newProject(t, s, ".pi")
	root := p.root()
	m := NewMock(func(*Request) Reply { return Reply{Text: "PI-DONE"} })
	defer m.Close()
	agent := filepath.Join(p.home, ".pi", "agent")
	models := map[string]any{"providers": map[string]any{"mock": map[string]any{
		"baseUrl": m.URL() + "/v1", "api": "openai-completions", "apiKey": "dummy",
		"compat": map[string]any{"supportsDeveloperRole": false, "supportsReasoningEffort": false},
		"models": []any{map[string]any{"id": "mock-model"}},
	}}}
	writeJSONFile(t, filepath.Join(agent, "models.json"), models)
	// Status reads the installed Pi's version from the pi on PATH, and
	// its trust: 0.73 has no gate (awaiting proof at once), 1.x is
	// needs-trust until trust.json trusts the project.
	env := append(p.env("PI_OFFLINE=1"), "PATH="+filepath.Dir(pi)+string(os.PathListSeparator)+path)
	if c.Node != nil { // Pi >= 0.79 loads project extensions only in a trusted project
		if st := p.stateIn("pi", env); st != "needs-trust" {
			s.fatalf("status before trust", "pi is %s, want needs-trust", st)
		}
		writeJSONFile(t, filepath.Join(agent, "trust.json"), map[string]any{root: true})
	}
	if st := p.stateIn("pi", env); st != "configured-awaiting-proof" {
		s.fatalf("status with the gate open", "pi is %s, want configured-awaiting-proof", st)
	}

	run := func(check, prompt string) []*Request {
		before := len(m.Requests())
		out, errs, code := p.run(p.dir, 3*time.Minute, env, "", pi, "--provider", "mock", "--model", "mock-model", "-p", prompt)
		if code != 0 || !strings.Contains(out, "PI-DONE") {
			s.fatalf(check, "exit %d\nstdout %s\nstderr %s", code, tailS(out, 20), tailS(errs, 20))
		}
		reqs := m.Requests()[before:]
		if len(reqs) == 0 {
			s.fatalf(check, "no model request")
		}
		return reqs
	}

	canary := "CANARY-pi-41c7aa09-never-store"
	reqs := run("headless run", "What must run before every push? "+canary)
	if !anyRequest(reqs, func(r *Request) bool { return r.Contains(p.memory) }) {
		s.fatalf("brief in the model request", "no request holds the remembered %q", p.memory)
	}
	if st := p.state("pi"); st != "active" {
		s.fatalf("status active", "pi is %s", st)
	}
	p.tr("audit verify", "audit", "verify")
	if n := p.workers("pi", "pi"); n != 1 {
		s.fatalf("receipt", "%d pi workers among the receipts, want 1", n)
	}
	p.noCanary(canary)

	// A generic prompt shares no word with the memory: the startup brief
	// fills what the hint's recall leaves (hint + fill, docs/memory.md).
	if reqs := run("generic prompt", "hello"); !anyRequest(reqs, func(r *Request) bool { return r.Contains(p.memory) }) {
		s.fatalf("generic prompt", "the prompt %q brought none of the project's memories (hint + fill)", "hello")
	}

	// Fail open: the program exits before reading its stdin, and the
	// prompt (the task hint) is larger than a pipe buffer, so the
	// extension's write fails with EPIPE every time.
	bin := filepath.Join(p.dir, ".tree-ring", "bin", "tree-ring")
	if err := os.Rename(bin, bin+".real"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	reqs = run("fails open (tree-ring exits before reading stdin)", "Fail open please. "+strings.Repeat("word ", 20000))
	if anyRequest(reqs, func(r *Request) bool { return r.Contains(p.memory) }) {
		s.fatalf("fails open", "the memory reached the model although the preflight failed")
	}
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
