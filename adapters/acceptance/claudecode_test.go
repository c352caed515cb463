package acceptance

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters/preflight"
)

const (
	checkpointText = "Tree Ring automatic capture checkpoint"
	capturedLesson = "Acceptance lesson: retry flaky network tests with the fake clock"
	subagentTask   = "Summarize the accproj layout (subagent task SUBTASK-7f3)"
	subagentDone   = "SUBAGENT-DONE-7f3"
	mainDone       = "MAIN-DONE"
)

var checkpointID = regexp.MustCompile(checkpointText + ` ([0-9a-f-]{36})\.`)

// checkpoints lists the distinct checkpoint ids in the requests: one means
// the Stop blocked once and its re-run ended the turn.
func checkpoints(reqs []*Request, filter func(*Request) bool) map[string]bool {
	ids := map[string]bool{}
	for _, r := range reqs {
		if filter(r) {
			for _, m := range checkpointID.FindAllStringSubmatch(r.Text(), -1) {
				ids[m[1]] = true
			}
		}
	}
	return ids
}

// agentScript plays the model for a parent session and one subagent: the
// parent first spawns the subagent (spawn), optionally waits for it (wait,
// nil when the spawn is synchronous or the wait was made), then answers the
// Stop checkpoint by running the first capture line through the client's
// shell tool (shell, given the filled line), then finishes. The subagent
// answers its task and writes nothing at its own checkpoint. isMain tells a
// parent request from a subagent's.
func agentScript(isMain func(*Request) bool, spawn func() ToolCall, wait func(*Request) *ToolCall, shell func(line string) ToolCall, badLine *string) Script {
	return func(r *Request) Reply {
		switch {
		case isMain(r):
			switch {
			case !r.Contains(subagentTask): // not yet spawned
				return Reply{Calls: []ToolCall{spawn()}}
			case wait != nil && wait(r) != nil:
				return Reply{Calls: []ToolCall{*wait(r)}}
			case r.Contains(checkpointText) && !r.Contains(capturedLesson):
				line := firstCaptureLine(r.Text())
				if line == "" {
					*badLine = r.Text()
					return Reply{Text: mainDone}
				}
				return Reply{Calls: []ToolCall{shell(preflight.FillCapture(line, capturedLesson, "lesson", "scar"))}}
			default:
				return Reply{Text: mainDone}
			}
		case r.Contains(subagentTask):
			if r.Contains(checkpointText) {
				return Reply{Text: "Nothing durable happened in this subtask. " + subagentDone}
			}
			return Reply{Text: subagentDone}
		}
		return Reply{Text: "ok"} // side requests (titles, summaries)
	}
}

func TestClaudeCode(t *testing.T) {
	requireAcceptance(t)
	c := claudeCode
	s := step{t, c.String()}
	claude := install(t, c)
	p := newProject(t, s, ".claude")
	canary := "CANARY-cc-2f61d0a4-never-store"
	mainPrompt := "Review accproj and report. " + canary
	var bad string
	isMain := func(r *Request) bool { return r.Contains(canary) }
	m := NewMock(agentScript(isMain,
		func() ToolCall {
			return ToolCall{Name: "Agent", Input: map[string]any{"description": "Summarize layout", "prompt": subagentTask,
				"subagent_type": "general-purpose", "run_in_background": false}}
		}, nil,
		func(line string) ToolCall {
			return ToolCall{Name: "Bash", Input: map[string]any{"command": line, "description": "Capture one lesson"}}
		}, &bad))
	defer m.Close()

	debug := filepath.Join(t.TempDir(), "claude-debug.log")
	env := claudeEnv(p, m)
	out, errs, code := p.run(p.dir, 3*time.Minute, env, "", claude, "-p", mainPrompt, "--output-format", "json",
		"--allowedTools", "Bash", "Agent", "--debug-file", debug)
	log, _ := os.ReadFile(debug)
	if code != 0 {
		s.fatalf("headless run", "exit %d\nstdout %s\nstderr %s\ndebug log tail:\n%s", code, out, errs, tail(log, 40))
	}
	if bad != "" {
		s.fatalf("Stop reason", "the model found no first capture line in:\n%s", bad)
	}
	reqs := m.Requests()
	t.Logf("%s: %d model requests", c, len(reqs))

	// The bridge loads: no settings error, the SessionStart hook ran.
	if strings.Contains(string(log), "Invalid setting") || strings.Contains(string(log), "Settings Error") {
		s.fatalf("bridge loads", ".claude/settings.json was refused:\n%s", grepLines(log, "nvalid", "Settings"))
	}
	if !regexp.MustCompile(`SessionStart:startup .* finished with status 0`).Match(log) {
		s.fatalf("SessionStart runs", "no SessionStart hook finished with status 0 in the debug log:\n%s", grepLines(log, "SessionStart", "hook"))
	}
	p.checkAgentSession(s, "claude-code", "Bash", reqs, isMain, canary)
	if !strings.Contains(out, mainDone) {
		s.fatalf("turn ends", "the final result is not the model's last answer: %s", out)
	}
}

// checkAgentSession applies the checks every hooked client shares after one
// parent-plus-subagent session played by agentScript: the brief in the
// parent's and the subagent's requests, status active, audit verify, Stop
// blocked once (one checkpoint id, then the {} re-run ended the turn), the
// first capture line ran through the client's shell tool and recall finds
// the memory, one subagent worker, no canary under .tree-ring.
func (p *project) checkAgentSession(s step, harness, shellTool string, reqs []*Request, isMain func(*Request) bool, canary string) {
	p.t.Helper()
	if !anyRequest(reqs, func(r *Request) bool { return isMain(r) && r.Contains(p.memory) }) {
		s.fatalf("brief in the model request", "no parent request holds the remembered %q", p.memory)
	}
	if !anyRequest(reqs, func(r *Request) bool { return !isMain(r) && r.Contains(subagentTask) && r.Contains(p.memory) }) {
		s.fatalf("subagent brief", "no subagent request holds the remembered memory (SubagentStart context)")
	}
	if st := p.state(harness); st != "active" {
		s.fatalf("status active", "%s is %s", harness, st)
	}
	p.tr("audit verify", "audit", "verify")
	if ids := checkpoints(reqs, isMain); len(ids) != 1 {
		s.fatalf("Stop blocks once", "%d parent checkpoints, want 1: %v", len(ids), ids)
	}
	if !anyRequest(reqs, func(r *Request) bool {
		return isMain(r) && r.Contains(capturedLesson) && strings.Contains(r.Text(), "mem_")
	}) {
		s.fatalf("capture line runs", "the %s tool result shows no memory id", shellTool)
	}
	if !p.recalls(capturedLesson, "--agent-profile", harness) {
		s.fatalf("memory captured", "recall does not find %q", capturedLesson)
	}
	if n := p.workers(harness, harness+":"); n != 1 {
		s.fatalf("subagent receipt", "%d subagent workers among the receipts, want 1", n)
	}
	p.noCanary(canary)
}

func anyRequest(reqs []*Request, f func(*Request) bool) bool {
	for _, r := range reqs {
		if f(r) {
			return true
		}
	}
	return false
}

// tail is the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// grepLines is the lines of b holding any of words.
func grepLines(b []byte, words ...string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
