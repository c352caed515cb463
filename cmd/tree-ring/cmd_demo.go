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
	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/preflight"
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
// hook command line init wrote into the harness's settings file, through
// sh -c), and each printed result is that process's output.
func runDemo(ctx context.Context, g *Globals, o *demoOptions, args []string) (err error) {
	if len(args) > 0 {
		return usagef("demo takes no arguments")
	}
	h, err := demoHarness()
	if err != nil {
		return err
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
	d := &demo{ctx: ctx, w: g.Stdout, self: self, harness: h}
	steps := []func() error{d.setUp(base), d.initAndRemember, d.firstSession, d.nextSession, d.audit}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	if o.Keep != "" {
		fmt.Fprintf(d.w, "\nKept the project at %q.\n", d.project)
	}
	return d.finalState()
}

// demoHarness is the harness the demo plays: the one whose hook commands
// live in a settings file init manages (Claude Code), so that the demo
// runs exactly the command line the client would.
func demoHarness() (*adapters.Adapter, error) {
	for _, a := range adapters.All() {
		if len(a.HookEvents()) == 0 {
			continue
		}
		for _, b := range a.ManagedBlocks {
			if b.Format == adapters.ClaudeSettings {
				return a, nil
			}
		}
	}
	return nil, errors.New("demo: no registered harness keeps its hook commands in a managed settings file")
}

// settings is the file holding the demo harness's hook commands.
func (d *demo) settings() string {
	for _, b := range d.harness.ManagedBlocks {
		if b.Format == adapters.ClaudeSettings {
			return b.Path
		}
	}
	return ""
}

// setUp creates the throwaway project under base with the markers of every
// harness that answers lifecycle hooks.
func (d *demo) setUp(base string) func() error {
	return func() error {
		var err error
		d.project, err = filepath.Abs(filepath.Join(base, "demo project"))
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		d.root = filepath.Join(d.project, ".tree-ring")
		if _, err := os.Lstat(d.project); err == nil {
			return fmt.Errorf("demo: %s already exists; choose another --keep directory", d.project)
		}
		var names []string
		for _, a := range adapters.All() {
			if len(a.HookEvents()) == 0 || len(a.ProjectMarkers) == 0 {
				continue
			}
			if err := os.MkdirAll(filepath.Join(d.project, a.ProjectMarkers[0]), 0o755); err != nil {
				return fmt.Errorf("demo: %w", err)
			}
			names = append(names, a.Name)
		}
		if git, err := exec.LookPath("git"); err == nil {
			// The installed hook finds the project with `git rev-parse`; a
			// repository here keeps it from finding an enclosing one.
			_ = exec.CommandContext(d.ctx, git, "init", "-q", d.project).Run()
		}
		d.step("Created a throwaway project with "+strings.Join(names, " and ")+" markers at %q", d.project,
			"a path with a space, as real projects have; nothing outside it is touched")
		return nil
	}
}

// initAndRemember runs init and remembers two project memories.
func (d *demo) initAndRemember() error {
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
	d.hook, err = d.hookCommand()
	return err
}

// firstSession plays a session start, its stop checkpoint, and the
// checkpoint's capture line.
func (d *demo) firstSession() error {
	name := d.harness.Name
	session := newDemoID()
	start, err := d.play(d.hook, "SessionStart", session, map[string]any{"source": "startup", "model": "claude-sonnet-5"})
	if err != nil {
		return err
	}
	ctxText, err := additionalContext(start)
	if err != nil {
		return err
	}
	d.step(name+" SessionStart through the exact hook command in %s injected this context", d.settings(),
		"the harness starts with the project's memory, and a privacy-safe receipt proves it happened")
	d.show(ctxText)

	stop, err := d.play(d.hook, "Stop", session, map[string]any{"stop_hook_active": false, "last_assistant_message": "Fixed the flaky retry test."})
	if err != nil {
		return err
	}
	line, err := firstCaptureLine(stop)
	if err != nil {
		return err
	}
	d.step(name+" Stop returned one capture checkpoint with exact strict capture command lines", "",
		"the agent, not a transcript recorder, decides what is durable; zero to three candidates")
	line = preflight.FillCapture(line, "Retry tests need a fake clock; real sleeps made them flaky.", "lesson", "cambium")
	if _, err := d.sh(line, nil); err != nil {
		return fmt.Errorf("demo: the checkpoint's capture line failed: %w", err)
	}
	d.step("Ran the checkpoint's first capture line as the agent would", "",
		"capture is strict: agent scope, idempotent by operation id, normal sensitivity only")
	return nil
}

// nextSession plays a new session, which must recall the captured lesson.
func (d *demo) nextSession() error {
	next, err := d.play(d.hook, "SessionStart", newDemoID(), map[string]any{"source": "startup"})
	if err != nil {
		return err
	}
	ctxText, err := additionalContext(next)
	if err != nil {
		return err
	}
	recalled := strings.Contains(ctxText, "fake clock")
	d.step("A new "+d.harness.Name+" session recalls the captured lesson: %v", recalled,
		"what one session learned reaches the next one, scoped to this project and agent")
	d.show(ctxText)
	if !recalled {
		return errors.New("demo: the new session's context does not contain the captured memory")
	}
	return nil
}

// audit shows status and the harness's replay, and verifies the ledger.
func (d *demo) audit() error {
	out, err := d.tree("integrations", "status", "--verbose")
	if err != nil {
		return err
	}
	d.step("integrations status --verbose: recorded FSM state plus live checks of bridge bytes and receipts", "", "")
	d.show(out)
	if out, err = d.tree("audit", "replay", "--harness", d.harness.ID); err != nil {
		return err
	}
	d.step("audit replay --harness %s: how it became active, event by event", d.harness.ID, "")
	d.show(out)
	d.verify, err = d.tree("audit", "verify")
	return err
}

// finalState prints the harness's state and requires it active.
func (d *demo) finalState() error {
	id := d.harness.ID
	state, err := d.state(id)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.w, "\n%s: %s\n%s", id, state, d.verify)
	if state != "active" {
		return fmt.Errorf("demo: %s is %s, not active", id, state)
	}
	return nil
}

// demo holds the throwaway project and this binary's path.
type demo struct {
	ctx           context.Context
	w             io.Writer
	self          string
	harness       *adapters.Adapter
	project, root string
	hook          string // the SessionStart command line init installed
	verify        string // audit verify's output
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

// hookCommand reads the SessionStart command init wrote into the
// harness's settings file: the demo runs exactly what the client would.
func (d *demo) hookCommand() (string, error) {
	file := d.settings()
	raw, err := os.ReadFile(filepath.Join(d.project, filepath.FromSlash(file)))
	if err != nil {
		return "", fmt.Errorf("demo: read %s: %w", file, err)
	}
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct{ Command string }
		}
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("demo: %s: %w", file, err)
	}
	for _, m := range s.Hooks["SessionStart"] {
		for _, h := range m.Hooks {
			if strings.Contains(h.Command, "integrations hook --harness "+d.harness.ID) {
				return h.Command, nil
			}
		}
	}
	return "", fmt.Errorf("demo: no tree-ring SessionStart hook in %s", file)
}

// play sends a Claude Code hook payload of the real client's shape (benign
// metadata such as the transcript path included: the hook must ignore it).
func (d *demo) play(hook, event, session string, extra map[string]any) (string, error) {
	p := map[string]any{
		"session_id":      session,
		"transcript_path": filepath.Join(os.TempDir(), d.harness.ProjectMarkers[0], "projects", "demo", session+".jsonl"),
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
		if strings.Contains(l, " capture "+preflight.SummaryPlaceholder+" ") {
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
