package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// hookTo runs the lifecycle hook in-process with stdout w, counting the
// durable ledger commits it makes.
func (p *hp) hookTo(harness, stdin string, w io.Writer) (r result, commits int) {
	p.t.Helper()
	return p.hookFault(harness, stdin, w, nil)
}

// hookFault is hookTo with fault failing the transaction after the output
// was written (deps.CommitFault; nil: none).
func (p *hp) hookFault(harness, stdin string, w io.Writer, fault func() error) (r result, commits int) {
	p.t.Helper()
	d := p.deps()
	d.OnCommit = func() { commits++ }
	d.CommitFault = fault
	r = invocation{deps: d, env: p.env, stdin: stdin, stdout: w}.run("--root", filepath.Join(p.dir, ".tree-ring"), "integrations", "hook", "--harness", harness, "--input-json-stdin")
	if b, ok := w.(*bytes.Buffer); ok {
		r.stdout = b.String()
	}
	return r, commits
}

// runsOf is the session's run records, newest first.
func (p *hp) runsOf(harness, session string) []struct{ Command, Status, Diagnostic, Stage string } {
	p.t.Helper()
	var out struct {
		Runs []struct{ Command, Status, Diagnostic, Stage string }
	}
	if err := json.Unmarshal([]byte(p.ok("", "--json", "runs", "--harness", harness, "--session-id", session)), &out); err != nil {
		p.t.Fatal(err)
	}
	return out.Runs
}

// A successful start hook makes exactly one durable ledger commit: its run
// record, events and receipt land together.
func TestHookMakesOneDurableCommit(t *testing.T) {
	for _, h := range []struct{ harness, file string }{
		{"codex", "session-start.json"}, {"codex", "subagent-start.json"},
		{"claude-code", "session-start.json"}, {"claude-code", "subagent-start.json"},
	} {
		t.Run(h.harness+"/"+h.file, func(t *testing.T) {
			p := newHP(t, ".claude", ".codex")
			p.init()
			for i := range 2 { // the first proof and a repeat
				var out bytes.Buffer
				r, commits := p.hookTo(h.harness, p.payload(h.harness, h.file, nil), &out)
				if r.code != 0 {
					t.Fatalf("hook %d: exit %d: %s", i, r.code, r.stderr)
				}
				if commits != 1 {
					t.Errorf("hook %d made %d durable commits, want 1", i, commits)
				}
			}
		})
	}
}

// shortWriter accepts at most n bytes and reports a short write without
// an error (a broken io.Writer contract the hook must still catch).
type shortWriter struct{ n int }

func (w *shortWriter) Write(b []byte) (int, error) { return min(len(b), w.n), nil }

// Deliver before acknowledging: when the output cannot be written in full
// (a full disk, a reader that closed its end, a short write), or the commit
// fails after it was written, the hook exits 1, no receipt exists (no file,
// no receipt.recorded) and the run is recorded failed with preflight.failed,
// in one commit: status is failed with the diagnostic until a later hook
// with a working stdout proves the harness.
func TestHookDeliversBeforeAcknowledging(t *testing.T) {
	const session = "019a1b2c-3d4e-7f60-8a9b-0c1d2e3f4a5b" // the payload's
	cases := []struct {
		name       string
		stdout     func(t *testing.T) io.Writer
		fault      error
		diagnostic string
		message    string
	}{
		{"dev full", func(t *testing.T) io.Writer {
			f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
			if err != nil {
				t.Skipf("no /dev/full: %v", err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		}, nil, "output_failed", "write the output: no space left on device; no receipt recorded"},
		{"closed reader", func(t *testing.T) io.Writer {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			t.Cleanup(func() { w.Close() })
			return w
		}, nil, "output_failed", "write the output: broken pipe; no receipt recorded"},
		{"short write", func(*testing.T) io.Writer { return &shortWriter{n: 10} }, nil, "output_failed", "write the output: short write; no receipt recorded"},
		{"commit fails after the write", func(*testing.T) io.Writer { return &bytes.Buffer{} }, syscall.EIO, "error",
			"record the receipt after the output was written: input/output error; the output is void (non-zero exit)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newHP(t, ".codex")
			p.init()
			before := p.eventTypes()
			var fault func() error
			if c.fault != nil {
				fault = func() error { return c.fault }
			}
			r, commits := p.hookFault("codex", p.payload("codex", "session-start.json", nil), c.stdout(t), fault)
			if r.code != 1 || r.stderr != "tree-ring: "+c.message+"\n" {
				t.Fatalf("exit %d stderr %q", r.code, r.stderr)
			}
			if commits != 1 {
				t.Errorf("the failed hook made %d durable commits, want 1 (its failed run)", commits)
			}
			if rs := p.receipts(); len(rs) != 0 {
				t.Errorf("receipt files left: %v", rs)
			}
			added := p.eventTypes()[len(before):]
			if !slices.Equal(added, []string{"run.started", "run.finished", "preflight.failed"}) {
				t.Errorf("the failed hook appended %v, want its failed run and preflight.failed", added)
			}
			// Status: failed, with the diagnostic, until a preflight succeeds.
			e := p.status()["codex"]
			if e["state"] != "failed" || e["diagnostic"] != c.diagnostic || !strings.Contains(e["next_step"].(string), "diagnostic "+c.diagnostic) {
				t.Errorf("status after an undelivered preflight: %v", e)
			}
			if text := p.ok("", "integrations", "status"); !strings.Contains(text, "Codex: failed\n") || !strings.Contains(text, "  diagnostic: "+c.diagnostic+"\n") {
				t.Errorf("status text:\n%s", text)
			}
			runs := p.runsOf("codex", session)
			if len(runs) != 1 || runs[0].Status != "failed" || runs[0].Diagnostic != c.diagnostic || runs[0].Stage != "deliver" {
				t.Errorf("runs %+v, want one failed run with diagnostic %s at stage deliver", runs, c.diagnostic)
			}
			var out bytes.Buffer
			if r, _ := p.hookTo("codex", p.payload("codex", "session-start.json", nil), &out); r.code != 0 || len(p.receipts()) != 1 {
				t.Fatalf("retry: exit %d %s, receipts %v", r.code, r.stderr, p.receipts())
			}
			oneObject(t, out.String())
			if e := p.status()["codex"]; e["state"] != "active" || e["diagnostic"] != nil {
				t.Errorf("status after the retry: %v", e)
			}
			p.ok("", "audit", "verify")
		})
	}
}

// The real process: a host that closed its end of the pipe before the hook
// writes. Go kills a program writing to a broken fd 1 with SIGPIPE unless
// it ignores the signal; the hook must exit 1 (its failure exit) and
// record the failed run.
func TestHookBinaryClosedStdout(t *testing.T) {
	bin := buildBinary(t)
	p := newHP(t, ".codex")
	p.init()
	finished := count(p.eventTypes(), "run.finished")
	for _, target := range []string{"pipe", "/dev/full"} {
		t.Run(target, func(t *testing.T) {
			var w *os.File
			if target == "pipe" {
				r, pw, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				r.Close()
				w = pw
			} else {
				f, err := os.OpenFile(target, os.O_WRONLY, 0)
				if err != nil {
					t.Skipf("no %s: %v", target, err)
				}
				w = f
			}
			defer w.Close()
			cmd := exec.Command(bin, "--root", filepath.Join(p.dir, ".tree-ring"), "integrations", "hook", "--harness", "codex", "--input-json-stdin")
			var errb bytes.Buffer
			cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(p.payload("codex", "session-start.json", nil)), w, &errb
			cmd.Env = []string{"HOME=" + p.home, "PATH=" + os.Getenv("PATH")}
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("hook: %v (want exit 1), stderr %q", err, errb.String())
			}
			if !strings.HasPrefix(errb.String(), "tree-ring: write the output: ") {
				t.Errorf("stderr %q", errb.String())
			}
			if rs := p.receipts(); len(rs) != 0 {
				t.Errorf("receipt files: %v", rs)
			}
		})
	}
	if types := p.eventTypes(); count(types, "receipt.recorded") != 0 || count(types, "run.finished") != finished+2 {
		t.Errorf("events %v", types)
	}
}
