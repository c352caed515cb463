package acceptance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters/preflight"
)

var geminiCLI = npmClient{Name: "gemini-cli", Package: "@google/gemini-cli", Version: "0.61.0", Bin: "gemini"}

// TestGeminiCLI: untrusted, Gemini refuses to run (exit 55) and status says
// needs-trust; trusted in Gemini's own trustedFolders.json, the SessionStart
// hook's brief reaches the first model request, status turns active, the
// audit verifies, AfterAgent blocks exactly once although stop_hook_active
// comes back false after the capture tool call, the first capture line
// runs through Gemini's shell tool, and the prompt's canary is nowhere
// under .tree-ring.
func TestGeminiCLI(t *testing.T) {
	requireAcceptance(t)
	c := geminiCLI
	s := step{t, c.String()}
	gemini := install(t, c)
	p := newProject(t, s, ".gemini")
	root := p.root()
	canary := "CANARY-gemini-5d0e7b21-never-store"
	var bad string
	m := NewMock(func(r *Request) Reply {
		if r.Contains(checkpointText) && !r.Contains(capturedLesson) {
			line := firstCaptureLine(r.Text())
			if line == "" {
				bad = r.Text()
				return Reply{Text: mainDone}
			}
			return Reply{Calls: []ToolCall{{Name: "run_shell_command", Input: map[string]any{
				"command": preflight.FillCapture(line, capturedLesson, "lesson", "scar"), "description": "Capture one lesson"}}}}
		}
		return Reply{Text: mainDone}
	})
	defer m.Close()
	writeJSONFile(t, filepath.Join(p.home, ".gemini", "settings.json"), map[string]any{"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}}})
	env := p.env("GEMINI_API_KEY=dummy", "GOOGLE_GEMINI_BASE_URL="+m.URL())
	run := func(prompt string) (string, string, int) {
		return p.run(p.dir, 3*time.Minute, env, "", gemini, "-m", "mock-model", "-p", prompt, "--approval-mode", "yolo")
	}

	if st := p.state("gemini-cli"); st != "needs-trust" {
		s.fatalf("untrusted folder", "gemini-cli is %s, want needs-trust", st)
	}
	if _, errs, code := run("Untrusted run. " + canary); code != 55 || len(m.Requests()) != 0 {
		s.fatalf("untrusted folder", "exit %d (want 55), %d model requests\n%s", code, len(m.Requests()), tailS(errs, 10))
	}
	writeJSONFile(t, filepath.Join(p.home, ".gemini", "trustedFolders.json"), map[string]any{root: "TRUST_FOLDER"})
	if st := p.state("gemini-cli"); st != "configured-awaiting-proof" {
		s.fatalf("trusted folder", "gemini-cli is %s before a session", st)
	}

	out, errs, code := run("Review accproj and report. " + canary)
	if code != 0 || !strings.Contains(out, mainDone) {
		s.fatalf("headless run", "exit %d\nstdout %s\nstderr %s", code, tailS(out, 20), tailS(errs, 30))
	}
	if bad != "" {
		s.fatalf("AfterAgent reason", "the model found no first capture line in:\n%s", bad)
	}
	reqs := m.Requests()
	t.Logf("%s: %d model requests", c, len(reqs))
	if len(reqs) == 0 || reqs[0].API != Gemini || !reqs[0].Contains(p.memory) || !strings.Contains(reqs[0].Text(), "<hook_context>") {
		s.fatalf("brief in the first model request", "the first request does not hold the remembered %q in <hook_context>", p.memory)
	}
	if st := p.state("gemini-cli"); st != "active" {
		s.fatalf("status active", "gemini-cli is %s", st)
	}
	p.tr("audit verify", "audit", "verify")
	all := func(*Request) bool { return true }
	if ids := checkpoints(reqs, all); len(ids) != 1 {
		s.fatalf("AfterAgent blocks once", "%d checkpoints, want 1: %v", len(ids), ids)
	}
	if n := strings.Count(errs, "Agent execution blocked"); n != 1 {
		s.fatalf("AfterAgent blocks once", "Gemini reported %d blocks, want 1", n)
	}
	if anyRequest(reqs, func(r *Request) bool { return r.Contains("Command injection detected") }) {
		s.fatalf("capture line runs", "Gemini's shell tool refused the capture line as command injection")
	}
	if !p.recalls(capturedLesson, "--agent-profile", "gemini-cli") {
		s.fatalf("memory captured", "recall does not find %q", capturedLesson)
	}
	if n := p.workers("gemini-cli", "gemini-cli"); n != 1 {
		s.fatalf("receipt", "%d gemini-cli workers among the receipts, want 1", n)
	}
	p.noCanary(canary)

	// Distrusted again, status tells the truth although a receipt exists.
	writeJSONFile(t, filepath.Join(p.home, ".gemini", "trustedFolders.json"), map[string]any{root: "DO_NOT_TRUST"})
	if st := p.state("gemini-cli"); st != "needs-trust" {
		s.fatalf("distrusted folder", "gemini-cli is %s, want needs-trust", st)
	}
	if _, err := os.Stat(filepath.Join(p.home, ".gemini", "trusted_hooks.json")); err != nil {
		t.Logf("%s: no trusted_hooks.json recorded: %v", c, err)
	}
}
