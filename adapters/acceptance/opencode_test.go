package acceptance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var openCode = npmClient{Name: "opencode", Package: "opencode-ai", Version: "1.18.33", Bin: "opencode"}

// TestOpenCode: the published plugin loads (no trust step), its preflight
// brief reaches the agent loop's model request and not the title
// generator's, status turns active with a receipt for the session's agent,
// the audit verifies and the prompt's canary is nowhere under .tree-ring;
// with a tree-ring that exits at once, OpenCode still answers, without
// memory.
func TestOpenCode(t *testing.T) {
	requireAcceptance(t)
	c := openCode
	s := step{t, c.String()}
	opencode := install(t, c)
	p := newProject(t, s, ".opencode")
	m := NewMock(func(r *Request) Reply {
		if r.Contains("You are a title generator") {
			return Reply{Text: "Accproj review"}
		}
		return Reply{Text: mainDone}
	})
	defer m.Close()
	writeJSONFile(t, filepath.Join(p.dir, "opencode.json"), map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{"mock": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "Mock",
			"options": map[string]any{"baseURL": m.URL() + "/v1", "apiKey": "dummy"},
			"models":  map[string]any{"mock-model": map[string]any{"name": "Mock Model"}},
		}},
	})
	env := p.env("XDG_CONFIG_HOME="+filepath.Join(p.home, ".config"), "XDG_DATA_HOME="+filepath.Join(p.home, ".local", "share"),
		"XDG_CACHE_HOME="+filepath.Join(p.home, ".cache"), "XDG_STATE_HOME="+filepath.Join(p.home, ".local", "state"))
	run := func(check, prompt string) []*Request {
		before := len(m.Requests())
		out, errs, code := p.run(p.dir, 5*time.Minute, env, "", opencode, "run", "-m", "mock/mock-model", prompt)
		if code != 0 || !strings.Contains(out, mainDone) {
			s.fatalf(check, "exit %d\nstdout %s\nstderr %s", code, tailS(out, 20), tailS(errs, 30))
		}
		return m.Requests()[before:]
	}
	isTitle := func(r *Request) bool { return r.Contains("You are a title generator") }

	canary := "CANARY-opencode-3a9f60c2-never-store"
	reqs := run("headless run", "Review accproj and report. "+canary)
	t.Logf("%s: %d model requests", c, len(reqs))
	if !anyRequest(reqs, func(r *Request) bool { return !isTitle(r) && r.Contains(p.memory) }) {
		s.fatalf("brief in the model request", "no agent request holds the remembered %q", p.memory)
	}
	if anyRequest(reqs, func(r *Request) bool { return isTitle(r) && r.Contains(p.memory) }) {
		s.fatalf("scoped to the agent", "the title generator's request holds the brief")
	}
	if st := p.state("opencode"); st != "active" {
		s.fatalf("status active", "opencode is %s", st)
	}
	p.tr("audit verify", "audit", "verify")
	if n := p.workers("opencode", "opencode:build"); n != 1 {
		s.fatalf("receipt", "%d opencode:build workers among the receipts, want 1", n)
	}
	p.noCanary(canary)

	// Fail open: the program exits before reading its stdin.
	bin := filepath.Join(p.dir, ".tree-ring", "bin", "tree-ring")
	if err := os.Rename(bin, bin+".real"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	reqs = run("fails open (tree-ring exits before reading stdin)", "Fail open please.")
	if anyRequest(reqs, func(r *Request) bool { return r.Contains(p.memory) }) {
		s.fatalf("fails open", "the memory reached the model although the preflight failed")
	}
}
