package acceptance

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters/preflight"
)

var (
	fakeOnce sync.Once
	fakeBin  string
	fakeErr  error
)

// fakeHarness builds cmd fakeharness next to the tree-ring binary.
func fakeHarness(t *testing.T) string {
	t.Helper()
	dir := filepath.Dir(treeRing(t))
	fakeOnce.Do(func() {
		fakeBin = filepath.Join(dir, "fakeharness")
		if out, err := exec.Command("go", "build", "-o", fakeBin, "./fakeharness").CombinedOutput(); err != nil {
			fakeErr = err
			fakeBin = string(out)
		}
	})
	if fakeErr != nil {
		t.Fatalf("build fakeharness: %v\n%s", fakeErr, fakeBin)
	}
	return fakeBin
}

// hookRun is one hook command's report from the fake harness.
type hookRun struct {
	Exit                                               int
	Stdout, Stderr, Dropped, Context, Decision, Reason string
}

// fire sends a recorded real-client payload (testdata/harness-payloads)
// through the fake harness; cwd replaces __CWD__. It returns the one hook
// run the event triggers.
func (p *project) fire(harness, file, cwd string, edit func(map[string]any)) hookRun {
	p.t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "harness-payloads", harness, file))
	if err != nil {
		p.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		p.t.Fatal(err)
	}
	m["cwd"] = cwd
	if edit != nil {
		edit(m)
	}
	payload, _ := json.Marshal(m)
	out, errs, code := p.run(p.dir, time.Minute, p.env(), string(payload), fakeHarness(p.t), "-harness", harness, "-project", p.dir)
	if code != 0 {
		p.s.fatalf(file, "fakeharness: exit %d: %s", code, errs)
	}
	var rep struct{ Runs []hookRun }
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Runs) != 1 {
		p.s.fatalf(file, "want one hook run, got %s (%v)", out, err)
	}
	r := rep.Runs[0]
	if r.Exit != 0 || r.Dropped != "" {
		p.s.fatalf(file, "hook exit %d, dropped %q, stderr %s", r.Exit, r.Dropped, r.Stderr)
	}
	return r
}

// shell runs line as the client's shell tool does: Codex through bash -lc,
// Claude Code through sh -c (Bash tool semantics for a plain command).
func (p *project) shell(harness, dir, line string) (string, string, int) {
	p.t.Helper()
	if harness == "codex" {
		return p.run(dir, time.Minute, p.env(), "", "/bin/bash", "-lc", line)
	}
	return p.run(dir, time.Minute, p.env(), "", "/bin/sh", "-c", line)
}

// entries lists the names in dir and in the project root: a capture line
// must create neither stray files nor directories anywhere.
func (p *project) entries(dir string) []string {
	var names []string
	for _, d := range []string{dir, p.dir} {
		es, _ := os.ReadDir(d)
		for _, e := range es {
			names = append(names, d+"/"+e.Name())
		}
	}
	return names
}

func (p *project) memories() int {
	return strings.Count(p.tr("events", "events", "--type", "memory.captured"), "\n")
}

// xmlEscape escapes the five XML characters, as a client that shows a hook
// reason inside XML does (Codex 0.169 wraps it in <hook_prompt>).
var xmlEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace

// TestFakeHarness replays the recorded real-client payloads through the
// exact installed hook command lines, run as each client runs them, and
// plays the model at the Stop checkpoint: each printed capture line runs
// as printed from a subdirectory (a clear refusal, nothing written, no
// stray file), after an XML-escape round trip (unchanged), and filled in
// (one memory, idempotent); the re-run prints {}; subagents are their own
// workers; a canary in the payloads reaches no byte under .tree-ring.
func TestFakeHarness(t *testing.T) {
	// The documented field sets, and the payloads the pinned clients sent
	// in an acceptance run (testdata/harness-payloads/<harness>/<version>/).
	for _, set := range []struct{ harness, dir string }{
		{"claude-code", ""}, {"claude-code", claudeCode.Version + "/"}, {"codex", ""}, {"codex", codexCLI.Version + "/"},
	} {
		h, dir := set.harness, set.dir
		t.Run(h+"/"+dir, func(t *testing.T) {
			marker := map[string]string{"claude-code": ".claude", "codex": ".codex"}[h]
			p := newProject(t, step{t, "fake " + h}, marker)
			sub := filepath.Join(p.dir, "src", "pkg")
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if h == "codex" {
				// The fake harness plays a Codex that trusts the project
				// and its hooks; status must see both layers first.
				p.trustCodex("http://127.0.0.1:9")
			}
			const canary = "CANARY-fake-0b7d31e2-never-store"
			mark := func(m map[string]any) {
				m["transcript_path"] = "/home/u/" + canary + ".jsonl"
				m["last_assistant_message"] = "I did " + canary
			}
			if r := p.fire(h, dir+"session-start.json", sub, mark); !strings.Contains(r.Context, p.memory) {
				t.Fatalf("SessionStart context %q lacks the memory", r.Context)
			}
			if st := p.state(h); st != "active" {
				t.Fatalf("%s is %s after SessionStart", h, st)
			}
			if r := p.fire(h, dir+"subagent-start.json", sub, mark); !strings.Contains(r.Context, p.memory) {
				t.Fatalf("SubagentStart context %q lacks the memory", r.Context)
			}
			if n := p.workers(h, h+":"); n != 1 {
				t.Fatalf("%d subagent workers, want 1", n)
			}

			stop := p.fire(h, dir+"stop.json", sub, mark)
			if stop.Decision != "block" || strings.Contains(stop.Reason, canary) {
				t.Fatalf("stop: %+v", stop)
			}
			var lines []string
			for _, l := range strings.Split(stop.Reason, "\n") {
				if strings.Contains(l, " capture SUMMARY ") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 3 || firstCaptureLine(stop.Reason) != lines[0] {
				t.Fatalf("capture lines %q", lines)
			}
			if xmlEscape(stop.Reason) != stop.Reason {
				t.Fatalf("an XML escape changes the reason:\n%s", xmlEscape(stop.Reason))
			}
			before, memories := p.entries(sub), p.memories()
			for i, l := range lines {
				for _, c := range []struct{ line, left string }{
					{l, "SUMMARY, TYPE, RING"},
					{strings.Replace(l, " SUMMARY ", ` "A lesson" `, 1), "TYPE, RING"},
					{strings.Replace(l, " RING ", " scar ", 1), "SUMMARY, TYPE"},
				} {
					_, errs, code := p.shell(h, sub, c.line)
					if code != 2 || !strings.Contains(errs, "replace the placeholder "+c.left+" of the checkpoint line") {
						t.Fatalf("line %d run with %s left: exit %d, stderr %q", i+1, c.left, code, errs)
					}
				}
			}
			if after := p.entries(sub); !slices.Equal(before, after) || p.memories() != memories {
				t.Fatalf("unreplaced lines left entries %v (before %v) or memories", after, before)
			}
			filled := preflight.FillCapture(xmlEscape(lines[0]), capturedLesson, "lesson", "scar")
			var ids []string
			for range 2 {
				out, errs, code := p.shell(h, sub, filled)
				if code != 0 || !strings.HasPrefix(out, "mem_") {
					t.Fatalf("filled line: exit %d, %q %q", code, out, errs)
				}
				ids = append(ids, out)
			}
			if ids[0] != ids[1] || p.memories() != memories+1 || !p.recalls(capturedLesson, "--agent-profile", h) {
				t.Fatalf("captures %v, %d memories", ids, p.memories())
			}
			if after := p.entries(sub); !slices.Equal(before, after) {
				t.Fatalf("the capture left entries %v (before %v)", after, before)
			}
			active := func(m map[string]any) { mark(m); m["stop_hook_active"] = true }
			if r := p.fire(h, dir+"stop.json", sub, active); r.Stdout != "{}\n" || r.Decision != "" {
				t.Fatalf("stop_hook_active: %+v", r)
			}
			// A subagent's lessons are filed under the parent session's
			// profile (docs/memory.md "Subagent lessons").
			if r := p.fire(h, dir+"subagent-stop.json", sub, mark); r.Decision != "block" || !strings.Contains(r.Reason, "--agent-profile "+h+" --workflow-id ") {
				t.Fatalf("subagent stop: %+v", r)
			}
			p.tr("audit verify", "audit", "verify")
			p.noCanary(canary)
		})
	}
}

// A project path that needs quoting: the printed line single-quotes it and
// still runs as printed (filled in) through sh -c.
func TestCaptureLineQuotedRoot(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "acc proj")
	p := &project{t: t, s: step{t, "fake claude-code"}, home: filepath.Join(base, "home"), dir: dir, name: preflight.Normalized("project", "acc proj"), bin: treeRing(t)}
	for _, d := range []string{p.home, filepath.Join(dir, ".claude")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p.tr("init", "init")
	stop := p.fire("claude-code", "stop.json", dir, nil)
	line := firstCaptureLine(stop.Reason)
	if !strings.HasPrefix(line, "'"+dir+"/.tree-ring/bin/tree-ring' --root '"+dir+"/.tree-ring' capture ") {
		t.Fatalf("line %s", line)
	}
	out, errs, code := p.shell("claude-code", dir, preflight.FillCapture(line, capturedLesson, "lesson", "scar"))
	if code != 0 || !strings.HasPrefix(out, "mem_") {
		t.Fatalf("exit %d %q %q", code, out, errs)
	}
}
