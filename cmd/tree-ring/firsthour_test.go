package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters/preflight"
)

// inProject runs tree-ring as typed in the project's nested directory: no
// --root, no --source-root.
func (p *hp) inProject(args ...string) result {
	p.t.Helper()
	return invocation{deps: p.deps(), env: p.env, getwd: func() (string, error) { return p.cwd, nil }}.run(args...)
}

// Issue 26 item 1: a plain remember in a project stores the memory under
// the project's alias, and the next SessionStart brief shows it.
func TestPlainRememberReachesTheNextBrief(t *testing.T) {
	p := newHP(t, ".claude", ".git")
	p.init()
	r := p.inProject("--json", "remember", "Always run go vet before committing", "--event-type", "preference")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("remember: %+v", r)
	}
	_, alias := preflight.ProjectName(p.dir)
	if rec := decodeRecord(t, r.stdout); deref(rec.Project) != alias || !strings.HasPrefix(alias, "project-") {
		t.Fatalf("project %v, want the alias %q", rec.Project, alias)
	}
	h := p.hook("claude-code", p.payload("claude-code", "session-start.json", nil))
	if h.code != 0 || !strings.Contains(h.stdout, "Always run go vet before committing") {
		t.Fatalf("the brief does not show the memory: %+v", h)
	}
}

// Issue 26 item 1: capture defaults --project the same way; --project ""
// stores a project-less memory and says it reaches no brief.
func TestProjectDefaultForCaptureAndExplicitNone(t *testing.T) {
	p := newHP(t, ".claude", ".git")
	p.init()
	_, alias := preflight.ProjectName(p.dir)
	r := p.inProject("--json", "capture", "Run the linter before every push", "--event-type", "lesson",
		"--agent-profile", "a", "--workflow-id", "w", "--session-id", "s", "--operation-id", "auto-c-1", "--source-ref", "agent-checkpoint:c")
	if r.code != 0 || deref(decodeRecord(t, r.stdout).Project) != alias {
		t.Fatalf("capture: %+v", r)
	}
	r = p.inProject("--json", "remember", "A global note", "--event-type", "lesson", "--project", "")
	if r.code != 0 || decodeRecord(t, r.stdout).Project != nil ||
		r.stderr != "tree-ring: this memory names no project, so no project's session brief will show it (omit --project to store it for this project)\n" {
		t.Fatalf("remember --project \"\": %+v", r)
	}
}

// Issue 26 item 5: a write command in a project with no store refuses,
// names init and creates nothing; init still creates the store.
func TestNoStoreBeforeInit(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := invocation{deps: testDeps(), getwd: func() (string, error) { return dir, nil }}
	for _, args := range [][]string{
		{"remember", "--event-type", "lesson", "x"},
		{"capture", "x", "--event-type", "lesson", "--agent-profile", "a", "--workflow-id", "w", "--session-id", "s", "--operation-id", "auto-c-1", "--source-ref", "agent-checkpoint:c"},
		{"forget", "01JC0000000000000000000000", "--reason", "wrong"},
		{"projections", "rebuild"},
	} {
		r := in.run(args...)
		if r.code != 2 || r.stdout != "" || r.stderr != "tree-ring: no Tree Ring store in this project; nothing was created; run `tree-ring init` first\n" {
			t.Errorf("%v: %+v", args, r)
		}
		if _, err := os.Lstat(filepath.Join(dir, ".tree-ring")); err == nil {
			t.Fatalf("%v created .tree-ring", args)
		}
	}
	if r := in.run("init"); r.code != 0 {
		t.Fatalf("init: %+v", r)
	}
	if r := in.run("remember", "--event-type", "lesson", "x"); r.code != 0 {
		t.Fatalf("remember after init: %+v", r)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Issue 26 item 6: usage errors exit 2 with one line on stderr and
// nothing on stdout; help of what exists still exits 0.
func TestUsageErrorsExit2(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--bogus"}, "tree-ring: unknown flag --bogus (see --help)\n"},
		{[]string{"--bogus", "remember", "x"}, "tree-ring: unknown flag --bogus (see --help)\n"},
		{[]string{"remember", "--bogus", "x"}, "tree-ring: remember: unknown flag --bogus (see --help)\n"},
		{[]string{"help", "foo"}, "tree-ring: unknown command \"foo\" (see `tree-ring --help`)\n"},
		{[]string{"--help", "foo"}, "tree-ring: unknown command \"foo\" (see `tree-ring --help`)\n"},
		{[]string{"help", "remeber"}, "tree-ring: unknown command \"remeber\"; did you mean `tree-ring remember`? (see `tree-ring --help`)\n"},
		{[]string{"help", "audit", "verfy"}, "tree-ring: unknown audit subcommand \"verfy\"; did you mean `tree-ring audit verify`?\n"},
		{[]string{"completion", "tcsh"}, "tree-ring: completion: unknown shell \"tcsh\"; want bash, zsh or fish\n"},
	} {
		r := runCLI(t, "", tc.args...)
		if r.code != exitError || r.stdout != "" || r.stderr != tc.stderr {
			t.Errorf("%q: %+v, want stderr %q", tc.args, r, tc.stderr)
		}
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"help", "audit"}, {"help", "audit", "verify"}} {
		if r := runCLI(t, "", args...); r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "Usage: tree-ring") {
			t.Errorf("%q: %+v", args, r)
		}
	}
}

// Issue 26 item 6: the bash completion script, loaded in bash, completes
// command words, subcommands after a global flag's value, and flags.
func TestBashCompletionCompletes(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	r := runCLI(t, "", "completion", "bash")
	if r.code != 0 {
		t.Fatalf("completion bash: %+v", r)
	}
	script := filepath.Join(t.TempDir(), "tree-ring.bash")
	if err := os.WriteFile(script, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ words, want string }{
		{"tree-ring integ", "integrations"},
		{"tree-ring --root x integrations sta", "status"},
		{"tree-ring audit v", "verify"},
		{"tree-ring remember --event", "--event-type"},
		{"tree-ring comp", "completion"},
	} {
		w := strings.Fields(tc.words)
		cmd := exec.Command("bash", "-c", `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($#-1)); _tree_ring; echo "${COMPREPLY[@]}"`, "bash", script)
		cmd.Args = append(cmd.Args, w...)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != tc.want {
			t.Errorf("%s: %v %q, want %q", tc.words, err, out, tc.want)
		}
	}
	for _, shell := range []string{"zsh", "fish"} {
		if r := runCLI(t, "", "completion", shell); r.code != 0 || !strings.Contains(r.stdout, "remember") {
			t.Errorf("completion %s: %+v", shell, r)
		}
	}
}

// Issue 26 item 6: --help states the defaults the command really uses.
func TestHelpDefaultsAreTrue(t *testing.T) {
	r := runCLI(t, "", "remember", "--help")
	for _, want := range []string{
		"--source-root string             project root (default: the git checkout's top level",
		"--root string                    memory store root, a directory named .tree-ring (default: the project root's .tree-ring)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("remember --help lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, `(default ".")`) || strings.Contains(r.stdout, `(default ".tree-ring")`) {
		t.Errorf("a literal root default:\n%s", r.stdout)
	}
}

// Issue 26 item 12: progress of audit verify and projections rebuild on a
// terminal's stderr only; a pipe sees none, and stdout is the same.
func TestProgressOnATerminalOnly(t *testing.T) {
	c := newMemCLI(t)
	c.ok("remember", "--event-type", "lesson", "one")
	c.ok("remember", "--event-type", "lesson", "two")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "verify"}, "\rverified 2/2 events (100%)\n"},
		{[]string{"projections", "rebuild"}, "(100%)\n"},
	} {
		piped := c.run("", tc.args...)
		term := invocation{deps: c.d, stderrTerminal: true}.run(append([]string{"--root", c.root}, tc.args...)...)
		if piped.code != 0 || piped.stderr != "" || term.code != 0 {
			t.Fatalf("%v: piped %+v, terminal %+v", tc.args, piped, term)
		}
		if !strings.HasPrefix(term.stderr, "\r") || !strings.HasSuffix(term.stderr, tc.want) || strings.Count(term.stderr, "\n") != 1 {
			t.Errorf("%v on a terminal: stderr %q, want it to end %q", tc.args, term.stderr, tc.want)
		}
	}
}

// The progress line is redrawn once a tenth of the work or once a second.
func TestProgressThrottles(t *testing.T) {
	var b strings.Builder
	now := hpStart
	p := &progress{w: &b, now: func() time.Time { return now }, what: "verified"}
	for done := uint64(1); done <= 100; done++ {
		p.update(done, 100)
	}
	p.end()
	if got := strings.Count(b.String(), "\r"); got != 11 || !strings.HasSuffix(b.String(), "\rverified 100/100 events (100%)\n") {
		t.Fatalf("%d redraws: %q", got, b.String())
	}
	b.Reset()
	p = &progress{w: &b, now: func() time.Time { now = now.Add(2 * time.Second); return now }, what: "verified"}
	p.update(1, 1000)
	p.update(2, 1000)
	if got := strings.Count(b.String(), "\r"); got != 2 {
		t.Fatalf("a second passed, %d redraws: %q", got, b.String())
	}
	var none *progress // stderr not a terminal
	none.update(1, 2)
	none.end()
}

// Issue 26 item 12: --log-level debug is zerolog's console format on a
// terminal and JSON lines through a pipe.
func TestDebugLogIsReadableOnATerminal(t *testing.T) {
	c := newMemCLI(t)
	c.ok("remember", "--event-type", "lesson", "one")
	args := []string{"--root", c.root, "--log-level", "debug", "projections", "rebuild"}
	piped := invocation{deps: c.d}.run(args...)
	term := invocation{deps: c.d, stderrTerminal: true}.run(args...)
	if piped.code != 0 || !strings.HasPrefix(piped.stderr, `{"level":"debug"`) {
		t.Fatalf("piped: %+v", piped)
	}
	if term.code != 0 || !strings.Contains(term.stderr, "DBG") || strings.Contains(term.stderr, `{"level"`) {
		t.Fatalf("terminal: %+v", term)
	}
}

// Issue 26 item 12: a second init says it found the initialized store.
func TestSecondInitSaysItFoundTheStore(t *testing.T) {
	p := newHP(t, ".claude")
	if out := p.ok("", "init"); !strings.HasPrefix(out, "Tree Ring Memory initialized.\n") {
		t.Fatalf("first init: %q", out)
	}
	if out := p.ok("", "init"); !strings.HasPrefix(out, "Tree Ring Memory: found the store initialized already; it is kept as it is.\n") {
		t.Fatalf("second init: %q", out)
	}
}

// import and events import show their progress as audit verify does: on a
// terminal's stderr only; stdout carries the same result either way.
func TestImportProgressOnStderr(t *testing.T) {
	src := newMemCLI(t)
	src.ok("remember", "--event-type", "lesson", "one")
	src.ok("remember", "--event-type", "lesson", "two")
	dir := t.TempDir()
	memories, evs := filepath.Join(dir, "memories.jsonl"), filepath.Join(dir, "events.ndjson")
	if err := os.WriteFile(memories, []byte(src.ok("export")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(evs, []byte(src.ok("events")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"import", memories}, "\rimported 2/2 memories (100%)\n"},
		{[]string{"events", "import", evs}, "events (100%)\n"},
	} {
		piped, term := newMemCLI(t), newMemCLI(t)
		p := piped.run("", tc.args...)
		r := invocation{deps: term.d, stderrTerminal: true}.run(append([]string{"--root", term.root}, tc.args...)...)
		if p.code != 0 || p.stderr != "" || r.code != 0 || r.stdout != p.stdout {
			t.Fatalf("%v: piped %+v, terminal %+v", tc.args, p, r)
		}
		if !strings.HasPrefix(r.stderr, "\rimported ") || !strings.HasSuffix(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v on a terminal: stderr %q, want it to end %q", tc.args, r.stderr, tc.want)
		}
	}
}
