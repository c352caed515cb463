package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
)

type demoOptions struct {
	Keep string
}

func (o *demoOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Keep, "keep", "", "build the demo project under DIR and keep it (default: a temporary directory, removed at the end)")
}

func init() {
	register("demo", "", "a real end-to-end run in a throwaway project: init, memories, a Claude Code session through its installed hook, proof and audit", runDemo)
}

// runDemo plays what a user and Claude Code would do, with nothing faked:
// every step runs this same binary as a separate process (or the exact
// hook command line init wrote into .claude/settings.json, through sh -c),
// and each printed result is that process's output.
func runDemo(ctx context.Context, g *Globals, o *demoOptions, args []string) (err error) {
	if len(args) > 0 {
		return usagef("demo takes no arguments")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: locate this binary: %w", err)
	}
	// A reader that goes away (`demo | head`) must not kill the process
	// before it removes its throwaway project: writes then just fail.
	signal.Ignore(syscall.SIGPIPE)
	base := o.Keep
	if base == "" {
		if base, err = os.MkdirTemp("", "tree-ring-demo-"); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		defer os.RemoveAll(base)
	} else if err := os.MkdirAll(base, 0o755); err != nil {
		return fmt.Errorf("demo: --keep %s: %w", base, err)
	}
	d := &demo{ctx: ctx, w: g.Stdout, self: self}
	d.project, err = filepath.Abs(filepath.Join(base, "demo project"))
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	d.root = filepath.Join(d.project, ".tree-ring")
	if _, err := os.Lstat(d.project); err == nil {
		return fmt.Errorf("demo: %s already exists; choose another --keep directory", d.project)
	}
	for _, dir := range []string{".claude", ".codex"} {
		if err := os.MkdirAll(filepath.Join(d.project, dir), 0o755); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	if git, err := exec.LookPath("git"); err == nil {
		// The installed hook finds the project with `git rev-parse`; a
		// repository here keeps it from finding an enclosing one.
		_ = exec.CommandContext(ctx, git, "init", "-q", d.project).Run()
	}
	d.step("Created a throwaway project with Claude Code and Codex markers at %q", d.project,
		"a path with a space, as real projects have; nothing outside it is touched")

	out, err := d.tree("init")
	if err != nil {
		return err
	}
	d.step("tree-ring init published each harness's bridge create-only and recorded every step in .tree-ring/ledger.db", "",
		"bridges are configured, not yet proven: no harness is active until a session produces a receipt")
	d.show(out)

	for _, m := range []struct{ summary, typ, ring string }{
		{"Run the full test suite with `go test ./...` before every commit.", "preference", "heartwood"},
		{"The payments service rejects retries without an idempotency key.", "warning", "scar"},
	} {
		if _, err := d.tree("remember", m.summary, "--event-type", m.typ, "--ring", m.ring, "--scope", "project", "--project", "demo project"); err != nil {
			return err
		}
	}
	d.step("Remembered two project memories (a preference and a warning)", "",
		"memories are events too; their text lives in a deletable bucket, the chain keeps only digests")

	hook, err := d.hookCommand()
	if err != nil {
		return err
	}
	session := newDemoID()
	start, err := d.play(hook, "SessionStart", session, map[string]any{"source": "startup", "model": "claude-sonnet-5"})
	if err != nil {
		return err
	}
	ctxText, err := additionalContext(start)
	if err != nil {
		return err
	}
	d.step("Claude Code SessionStart through the exact hook command in .claude/settings.json injected this context", "",
		"the harness starts with the project's memory, and a privacy-safe receipt proves it happened")
	d.show(ctxText)

	stop, err := d.play(hook, "Stop", session, map[string]any{"stop_hook_active": false, "last_assistant_message": "Fixed the flaky retry test."})
	if err != nil {
		return err
	}
	line, err := firstCaptureLine(stop)
	if err != nil {
		return err
	}
	d.step("Claude Code Stop returned one capture checkpoint with exact strict capture command lines", "",
		"the agent, not a transcript recorder, decides what is durable; zero to three candidates")
	line = strings.NewReplacer(
		`"<concise summary>"`, `"Retry tests need a fake clock; real sleeps made them flaky."`,
		"<preference|decision|lesson|warning|correction|seed>", "lesson",
		"<cambium|scar|seed>", "cambium",
	).Replace(line)
	if _, err := d.sh(line, nil); err != nil {
		return fmt.Errorf("demo: the checkpoint's capture line failed: %w", err)
	}
	d.step("Ran the checkpoint's first capture line as the agent would", "",
		"capture is strict: agent scope, idempotent by operation id, normal sensitivity only")

	next, err := d.play(hook, "SessionStart", newDemoID(), map[string]any{"source": "startup"})
	if err != nil {
		return err
	}
	if ctxText, err = additionalContext(next); err != nil {
		return err
	}
	recalled := strings.Contains(ctxText, "fake clock")
	d.step("A new Claude Code session recalls the captured lesson: %v", recalled,
		"what one session learned reaches the next one, scoped to this project and agent")
	d.show(ctxText)
	if !recalled {
		return errors.New("demo: the new session's context does not contain the captured memory")
	}

	if out, err = d.tree("integrations", "status", "--verbose"); err != nil {
		return err
	}
	d.step("integrations status --verbose: recorded FSM state plus live checks of bridge bytes and receipts", "", "")
	d.show(out)
	if out, err = d.tree("audit", "replay", "--harness", "claude-code"); err != nil {
		return err
	}
	d.step("audit replay --harness claude-code: how it became active, event by event", "", "")
	d.show(out)
	verify, err := d.tree("audit", "verify")
	if err != nil {
		return err
	}
	state, err := d.state("claude-code")
	if err != nil {
		return err
	}
	if o.Keep != "" {
		fmt.Fprintf(d.w, "\nKept the project at %q.\n", d.project)
	}
	fmt.Fprintf(d.w, "\nclaude-code: %s\n%s", state, verify)
	if state != "active" {
		return fmt.Errorf("demo: claude-code is %s, not active", state)
	}
	return nil
}

// demo holds the throwaway project and this binary's path.
type demo struct {
	ctx           context.Context
	w             io.Writer
	self          string
	project, root string
	n             int
}

func (d *demo) step(what string, arg any, why string) {
	d.n++
	if arg != "" {
		what = fmt.Sprintf(what, arg)
	}
	if why != "" {
		what += " (why it matters: " + why + ")"
	}
	fmt.Fprintf(d.w, "\n[%d] %s.\n", d.n, what)
}

// show prints a command's output indented under its step.
func (d *demo) show(out string) {
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		fmt.Fprintf(d.w, "    | %s\n", l)
	}
}

// tree runs this binary on the demo store, from the project directory.
func (d *demo) tree(args ...string) (string, error) {
	cmd := exec.CommandContext(d.ctx, d.self, append([]string{"--root", d.root, "--source-root", d.project}, args...)...)
	cmd.Dir = d.project
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("demo: tree-ring %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// sh runs a command line as a harness does: sh -c from the project.
func (d *demo) sh(line string, stdin []byte) (string, error) {
	cmd := exec.CommandContext(d.ctx, "sh", "-c", line)
	cmd.Dir = d.project
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%v: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// hookCommand reads the SessionStart command init wrote into
// .claude/settings.json: the demo runs exactly what Claude Code would.
func (d *demo) hookCommand() (string, error) {
	raw, err := os.ReadFile(filepath.Join(d.project, ".claude", "settings.json"))
	if err != nil {
		return "", fmt.Errorf("demo: read .claude/settings.json: %w", err)
	}
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct{ Command string }
		}
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("demo: .claude/settings.json: %w", err)
	}
	for _, m := range s.Hooks["SessionStart"] {
		for _, h := range m.Hooks {
			if strings.Contains(h.Command, "integrations hook --harness claude-code") {
				return h.Command, nil
			}
		}
	}
	return "", errors.New("demo: no tree-ring SessionStart hook in .claude/settings.json")
}

// play sends a Claude Code hook payload of the real client's shape (benign
// metadata such as the transcript path included: the hook must ignore it).
func (d *demo) play(hook, event, session string, extra map[string]any) (string, error) {
	p := map[string]any{
		"session_id":      session,
		"transcript_path": filepath.Join(os.TempDir(), ".claude", "projects", "demo", session+".jsonl"),
		"cwd":             d.project,
		"hook_event_name": event,
	}
	for k, v := range extra {
		p[k] = v
	}
	in, _ := json.Marshal(p)
	out, err := d.sh(hook, in)
	if err != nil {
		return "", fmt.Errorf("demo: %s hook: %w", event, err)
	}
	return out, nil
}

// state reads one harness's state from `integrations status --json`.
func (d *demo) state(harness string) (string, error) {
	out, err := d.tree("--json", "integrations", "status")
	if err != nil {
		return "", err
	}
	var rep struct {
		Integrations []struct{ ID, State string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		return "", fmt.Errorf("demo: status JSON: %w", err)
	}
	for _, i := range rep.Integrations {
		if i.ID == harness {
			return i.State, nil
		}
	}
	return "", fmt.Errorf("demo: status does not list %s", harness)
}

func additionalContext(out string) (string, error) {
	var o struct {
		HookSpecificOutput struct{ AdditionalContext string } `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &o); err != nil || o.HookSpecificOutput.AdditionalContext == "" {
		return "", fmt.Errorf("demo: the start hook printed no context: %q", out)
	}
	return o.HookSpecificOutput.AdditionalContext, nil
}

func firstCaptureLine(out string) (string, error) {
	var o struct{ Decision, Reason string }
	if err := json.Unmarshal([]byte(out), &o); err != nil || o.Decision != "block" {
		return "", fmt.Errorf("demo: the stop hook returned no checkpoint: %q", out)
	}
	for _, l := range strings.Split(o.Reason, "\n") {
		if strings.Contains(l, `capture "<concise summary>"`) {
			return l, nil
		}
	}
	return "", errors.New("demo: the checkpoint has no capture line")
}

func newDemoID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "demo-" + hex.EncodeToString(b)
}
