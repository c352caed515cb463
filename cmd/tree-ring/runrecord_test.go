package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/tree-ring/internal/runrec"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/projections"
)

// cliSession runs a sequence of in-process invocations on one clock and one
// id source, as a sequence of processes would: ids never repeat across
// invocations (runCLI restarts both per call). Its ids live in a time
// range of their own, so they never collide with fixtures.
type cliSession struct{ d deps }

func newCLISession() *cliSession {
	return &cliSession{d: deps{Clock: Clock{
		Now:     eventstest.Clock(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC), time.Second),
		NewID:   eventstest.IDsAt(time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC), 0xAA000000),
		Entropy: eventstest.Entropy(0xAA000000),
		Nonce:   testNonce,
	}}}
}

func (s *cliSession) run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return invocation{deps: s.d, stdin: stdin}.run(args...)
}

// globals returns Globals on the session's clock and ids, for tests that
// drive the recorder directly.
func (s *cliSession) globals(root, sourceRoot string) *Globals {
	g := &Globals{Flags: cli.Flags{Root: root, SourceRoot: sourceRoot, LockTimeout: 3 * time.Second}, Clock: Clock{Now: s.d.Now, NewID: s.d.NewID}}
	g.IO = IO{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
	return g
}

// runProject makes a project directory with an empty .tree-ring root path.
func runProject(t *testing.T, name string) (src, root string) {
	t.Helper()
	src = filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	return src, filepath.Join(src, ".tree-ring")
}

// runLedger is runProject with the ledger created, as init leaves it:
// inside a project no other write command creates it.
func runLedger(t *testing.T, name string) (src, root string) {
	t.Helper()
	src, root = runProject(t, name)
	st, err := bolt.OpenRoot(root, bolt.Options{Projections: projections.All()})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return src, root
}

type runsOut struct {
	ScopeKey string    `json:"scope_key"`
	Limit    int       `json:"limit"`
	Examined int       `json:"examined"`
	Runs     []runView `json:"runs"`
}

// listRuns runs `runs --json` with args (global flags, and the flags of
// runs after "runs").
func listRuns(t *testing.T, s *cliSession, args ...string) runsOut {
	t.Helper()
	argv := []string{"--json"}
	if i := slices.Index(args, "--harness"); i >= 0 {
		argv = append(append(append(argv, args[:i]...), "runs"), args[i:]...)
	} else {
		argv = append(append(argv, args...), "runs")
	}
	r := s.run(t, "", argv...)
	if r.code != 0 {
		t.Fatalf("runs: %d %s", r.code, r.stderr)
	}
	var out runsOut
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("runs --json: %v\n%s", err, r.stdout)
	}
	return out
}

// ledgerEvents returns every envelope of the ledger, decoded strictly.
func ledgerEvents(t *testing.T, s *cliSession, root string, extra ...string) []events.Envelope {
	t.Helper()
	r := s.run(t, "", append([]string{"--root", root, "events"}, extra...)...)
	if r.code != 0 {
		t.Fatalf("events: %d %s", r.code, r.stderr)
	}
	var out []events.Envelope
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if line == "" {
			continue
		}
		e, err := events.DecodeEnvelope([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func TestRunSucceeded(t *testing.T) {
	s := newCLISession()
	src, _ := runProject(t, "p")
	root := filepath.Join(t.TempDir(), "store") // a scratch root: the sample is another project's
	r := s.run(t, "", "--root", root, "--source-root", src, "events", "import", sampleLedger)
	if r.code != 0 {
		t.Fatalf("import: %d %s", r.code, r.stderr)
	}
	evs := ledgerEvents(t, s, root)
	// run.started before the work, run.finished after it, one stream.
	if len(evs) != 6 || evs[0].Type != events.TypeRunStarted || evs[5].Type != events.TypeRunFinished || evs[0].Stream != evs[5].Stream {
		t.Fatalf("want run.started, 4 imported events, run.finished; got %v", types(evs))
	}
	out := listRuns(t, s, "--root", root, "--source-root", src)
	if len(out.Runs) != 1 {
		t.Fatalf("runs: %+v", out)
	}
	got := out.Runs[0]
	file, _ := os.ReadFile(sampleLedger)
	sum := sha256.Sum256(file)
	if got.Status != events.RunStatusSucceeded || got.Command != events.RunCmdEventsImport || got.Stage != "done" ||
		got.InputSHA256 != hex.EncodeToString(sum[:]) || got.InputChars != int64(len([]rune(string(file)))) ||
		got.Telemetry == nil || got.Telemetry.Items == nil || *got.Telemetry.Items != 4 ||
		got.DurationMS == nil || got.EndedAt == "" || got.PID != os.Getpid() || got.Diagnostic != "" {
		t.Fatalf("record: %+v", got)
	}
	if want, _ := runrec.CLIScope(src); out.ScopeKey != want || got.ScopeKey != want {
		t.Fatalf("scope %s, record %s, want %s", out.ScopeKey, got.ScopeKey, want)
	}
	if v := s.run(t, "", "--root", root, "audit", "verify"); v.code != 0 {
		t.Fatalf("verify: %s", v.stderr)
	}
}

func types(evs []events.Envelope) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// TestRunFailedRecordsDiagnosticCode: input refused before the work starts
// (a bad line, a missing file) changes nothing, not even a run record
// (issue 2: a bad import leaves the ledger as it was); a command that fails
// during its work is recorded as failed with a bounded diagnostic code, and
// no error text reaches the ledger.
func TestRunFailedRecordsDiagnosticCode(t *testing.T) {
	s := newCLISession()
	src, root := runProject(t, "p")
	bad := filepath.Join(t.TempDir(), "bad.ndjson")
	line, _ := os.ReadFile(sampleLedger)
	first := strings.SplitN(string(line), "\n", 2)[0]
	tampered := strings.Replace(first, `"cli_version":"0.1.0"`, `"cli_version":"0.1.0","note":"x"`, 1)
	if err := os.WriteFile(bad, []byte(tampered+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := s.run(t, "", "--root", root, "--source-root", src, "events", "import", bad)
	if r.code != exitError || !strings.Contains(r.stderr, `unknown key "note"`) {
		t.Fatalf("import: %d %q", r.code, r.stderr)
	}
	missing := s.run(t, "", "--root", root, "--source-root", src, "events", "import", filepath.Join(t.TempDir(), "absent.ndjson"))
	if missing.code != exitError {
		t.Fatalf("import absent: %d %q", missing.code, missing.stderr)
	}
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Fatalf("refused input created the store: %v", err)
	}

	// A well-formed file whose run.started sits on another run's stream:
	// every line decodes, so the import starts (a run is recorded), and the
	// runs projection refuses the event during the append.
	f := &events.Factory{Now: s.d.Now, NewID: s.d.NewID, Actor: "host-b"}
	rid := s.d.NewID().String()
	e := f.Must(events.RunStream(s.d.NewID().String()), events.TypeRunStarted, &events.RunStarted{
		RunID: rid, ScopeKey: strings.Repeat("cd", 12), Command: events.RunCmdCapture, Stage: "start", PID: 9, StartedAt: "2026-11-02T09:00:00.000Z",
	})
	e.Version, e.Position = 1, 1
	e.Seal(events.GenesisHash)
	foreign := filepath.Join(t.TempDir(), "foreign-note.ndjson")
	if err := os.WriteFile(foreign, append(e.Encode(), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	r = s.run(t, "", "--root", root, "--source-root", src, "events", "import", foreign)
	if r.code != exitError {
		t.Fatalf("foreign import: %d %q", r.code, r.stderr)
	}
	out := listRuns(t, s, "--root", root, "--source-root", src)
	if len(out.Runs) != 1 {
		t.Fatalf("runs: %+v", out.Runs)
	}
	got := out.Runs[0]
	if got.Status != events.RunStatusFailed || events.ValidDiagnostic(got.Diagnostic) != nil || got.Stage != "append" || got.InputSHA256 == "" {
		t.Errorf("run %+v, want failed with a diagnostic code at stage append", got)
	}
	// The diagnostic is a code: the error text (file name, message) is not in the ledger.
	raw, _ := os.ReadFile(filepath.Join(root, bolt.LedgerFile))
	for _, leak := range []string{"foreign-note", "is on stream", "absent.ndjson", `"note"`} {
		if bytes.Contains(raw, []byte(leak)) {
			t.Errorf("ledger contains error text %q", leak)
		}
	}
}

func TestRunsArgsAndHumanOutput(t *testing.T) {
	s := newCLISession()
	src, root := runLedger(t, "p")
	for i := 0; i < 3; i++ {
		if r := s.run(t, "", "--root", root, "--source-root", src, "projections", "rebuild"); r.code != 0 {
			t.Fatalf("rebuild: %s", r.stderr)
		}
	}
	for _, bad := range []string{"0", "51", "x", "-1"} {
		if r := s.run(t, "", "--root", root, "--source-root", src, "runs", bad); r.code != exitError || r.stdout != "" {
			t.Errorf("runs %s: %d %q %q", bad, r.code, r.stdout, r.stderr)
		}
	}
	if out := listRuns(t, s, "--root", root, "--source-root", src); len(out.Runs) != 3 || out.Limit != 10 || out.Examined != 3 {
		t.Fatalf("runs: %+v", out)
	}
	two := s.run(t, "", "--root", root, "--source-root", src, "--json", "runs", "2")
	var out runsOut
	if err := json.Unmarshal([]byte(two.stdout), &out); err != nil || len(out.Runs) != 2 || out.Examined != 2 {
		t.Fatalf("runs 2: %v %s", err, two.stdout)
	}
	h := s.run(t, "", "--root", root, "--source-root", src, "runs")
	scope, _ := runrec.CLIScope(src)
	golden(t, "runs.txt", []byte(strings.ReplaceAll(h.stdout, scope, "<scope>")))
}

// TestRunSignals runs a long `projections rebuild` as a real process on a
// large ledger and signals it mid-run.
func TestRunSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a large ledger")
	}
	bin := buildBinary(t)
	template := filepath.Join(t.TempDir(), "ledger.db")
	bigLedger(t, template)
	// copyLedger gives each case its own project with the large ledger.
	copyLedger := func(t *testing.T) (src, root string) {
		src, root = runProject(t, "p")
		raw, err := os.ReadFile(template)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(root, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, bolt.LedgerFile), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		return src, root
	}
	// startRebuild returns once run.started is committed and the rebuild
	// is under way: the fold of the fixture lasts far longer than a signal
	// takes to arrive, and ctx is checked between fold chunks.
	startRebuild := func(t *testing.T, src, root string) *exec.Cmd {
		cmd, waitLine := startLogged(t, bin, "--root", root, "--source-root", src, "--log-level", "debug", "projections", "rebuild")
		waitLine("run started")
		return cmd
	}

	// SIGTERM: the run ends aborted, recorded on the way out; exit 130.
	t.Run("sigterm-aborted", func(t *testing.T) {
		src, root := copyLedger(t)
		cmd := startRebuild(t, src, root)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitCanceled {
			t.Fatalf("rebuild after SIGTERM: %v, want exit %d", err, exitCanceled)
		}
		s := newCLISession()
		fin := ledgerEvents(t, s, root, "--type", events.TypeRunFinished, "--after", strconv.Itoa(bigLedgerEvents))
		if len(fin) != 1 {
			t.Fatalf("want one run.finished after the fixture, got %d", len(fin))
		}
		p, err := events.Payload[events.RunFinished](&fin[0])
		if err != nil {
			t.Fatal(err)
		}
		if p.Status != events.RunStatusAborted || p.Stage != "fold" || p.Diagnostic != "" || p.Telemetry != nil {
			t.Fatalf("run.finished: %+v, want aborted at stage fold", p)
		}
		// The next write-mode process catches the projections up; the
		// aborted run is not mistaken for an interrupted one.
		empty := emptyFile(t)
		if r := s.run(t, "", "--root", root, "--source-root", src, "events", "import", empty); r.code != 0 {
			t.Fatal(r.stderr)
		}
		out := listRuns(t, s, "--root", root, "--source-root", src)
		if len(out.Runs) != 2 || out.Runs[1].Status != events.RunStatusAborted || out.Runs[1].Command != events.RunCmdProjectionsRebuild {
			t.Fatalf("runs: %+v", out.Runs)
		}
		if n := len(ledgerEvents(t, s, root, "--type", events.TypeRunInterrupted)); n != 0 {
			t.Fatalf("%d run.interrupted", n)
		}
	})

	// SIGKILL: nothing is recorded on the way out; the next recorded
	// command in the same scope marks the run interrupted, a command in
	// another scope does not.
	t.Run("sigkill-interrupted", func(t *testing.T) {
		src, root := copyLedger(t)
		other := t.TempDir()
		cmd := startRebuild(t, src, root)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait() // reaped: a zombie would still answer kill(pid, 0)
		killedPID := cmd.Process.Pid

		s := newCLISession()
		empty := emptyFile(t)
		if r := s.run(t, "", "--root", root, "--source-root", other, "events", "import", empty); r.code != 0 {
			t.Fatalf("import (other scope): %s", r.stderr)
		}
		out := listRuns(t, s, "--root", root, "--source-root", src)
		if len(out.Runs) != 1 || out.Runs[0].Status != events.RunStatusRunning || !out.Runs[0].Stale || out.Runs[0].PID != killedPID {
			t.Fatalf("before recovery: %+v", out.Runs)
		}
		if r := s.run(t, "", "--root", root, "--source-root", src, "events", "import", empty); r.code != 0 {
			t.Fatalf("import: %s", r.stderr)
		}
		intr := ledgerEvents(t, s, root, "--type", events.TypeRunInterrupted)
		if len(intr) != 1 {
			t.Fatalf("want one run.interrupted, got %d", len(intr))
		}
		p, _ := events.Payload[events.RunInterrupted](&intr[0])
		if p.PID != killedPID || p.DetectedByPID != os.Getpid() || p.RunID != out.Runs[0].RunID {
			t.Fatalf("run.interrupted: %+v", p)
		}
		out = listRuns(t, s, "--root", root, "--source-root", src)
		if len(out.Runs) != 2 || out.Runs[0].Status != events.RunStatusSucceeded || out.Runs[1].Status != events.RunStatusInterrupted {
			t.Fatalf("after recovery: %+v", out.Runs)
		}
		// Recovery happens once.
		if r := s.run(t, "", "--root", root, "--source-root", src, "events", "import", empty); r.code != 0 {
			t.Fatal(r.stderr)
		}
		if n := len(ledgerEvents(t, s, root, "--type", events.TypeRunInterrupted)); n != 1 {
			t.Fatalf("%d run.interrupted after a second command", n)
		}
	})
}

func emptyFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "empty.ndjson")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startLogged starts the binary with stderr piped and returns a function
// that blocks until a stderr line contains want.
func startLogged(t *testing.T, bin string, args ...string) (*exec.Cmd, func(want string)) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		buf := make([]byte, 0, 4096)
		chunk := make([]byte, 4096)
		for {
			n, err := stderr.Read(chunk)
			buf = append(buf, chunk[:n]...)
			for {
				i := bytes.IndexByte(buf, '\n')
				if i < 0 {
					break
				}
				lines <- string(buf[:i])
				buf = buf[i+1:]
			}
			if err != nil {
				return
			}
		}
	}()
	return cmd, func(want string) {
		t.Helper()
		for line := range lines {
			if strings.Contains(line, want) {
				go func() { // keep draining so the child never blocks on stderr
					for range lines {
					}
				}()
				return
			}
		}
		t.Fatalf("process ended before logging %q", want)
	}
}

// bigLedgerEvents is the size of the fixture of the signal tests: enough
// run events (each decoded and folded) that a rebuild lasts about a second,
// in two fold chunks (bolt folds 50,000 events per transaction).
const bigLedgerEvents = 60_000

// bigLedger writes a ledger file of bigLedgerEvents run events (finished
// runs of one unrelated scope) directly through the bolt API. Envelopes are
// built from one marshalled payload shape instead of events.Factory, whose
// per-event validation would dominate the test's time.
func bigLedger(t testing.TB, path string) {
	t.Helper()
	st, err := bolt.Open(path, bolt.Options{Projections: projections.All()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	ts := events.FormatRunTime(at)
	scope := strings.Repeat("0f", 12)
	newID := eventstest.IDsAt(at, 0xBB000000)
	env := func(stream, typ string, p any) events.Envelope {
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return events.Envelope{ID: newID(), Stream: stream, Type: typ, SchemaVersion: 1, RecordedAt: at, Actor: "cli", Payload: raw}
	}
	const chunk = 20_000
	for done := 0; done < bigLedgerEvents; done += chunk {
		err := st.Update(context.Background(), func(tx *bolt.Tx) error {
			for i := 0; i < chunk/2; i++ {
				id := newID().String()
				stream := events.RunStream(id)
				a := env(stream, events.TypeRunStarted, &events.RunStarted{RunID: id, ScopeKey: scope, Command: events.RunCmdCapture, Stage: "start", PID: 1, StartedAt: ts})
				b := env(stream, events.TypeRunFinished, &events.RunFinished{RunID: id, ScopeKey: scope, Status: events.RunStatusSucceeded, Stage: "done", EndedAt: ts})
				if _, err := tx.Append(stream, 0, a, b); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// sleeper starts a child process that stays alive until the test kills it.
func sleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// startOrphan starts a run in scope as process pid and never ends it, as a
// process that is still working (or died) would leave it.
func startOrphan(t *testing.T, s *cliSession, root, src string, pid int) string {
	t.Helper()
	g := s.globals(root, src)
	g.PID = func() int { return pid }
	_ = g.setupLog()
	st, err := g.OpenStore(false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	scope, err := g.CLIScope()
	if err != nil {
		t.Fatal(err)
	}
	// Its recorder is not the later commands': the run belongs to process
	// pid, not to them.
	run, err := g.StartRun(context.Background(), st, RunSpec{Command: events.RunCmdCapture, Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	return run.ID()
}

func TestRunLivePIDStaysRunning(t *testing.T) {
	s := newCLISession()
	src, root := runLedger(t, "p")
	child := sleeper(t)
	id := startOrphan(t, s, root, src, child.Process.Pid)
	empty := emptyFile(t)
	for i := 0; i < 2; i++ {
		if r := s.run(t, "", "--root", root, "--source-root", src, "events", "import", empty); r.code != 0 {
			t.Fatal(r.stderr)
		}
	}
	out := listRuns(t, s, "--root", root, "--source-root", src)
	if len(out.Runs) != 3 || out.Runs[2].RunID != id || out.Runs[2].Status != events.RunStatusRunning || out.Runs[2].Stale {
		t.Fatalf("live run: %+v", out.Runs)
	}
	// Once the process is gone (and reaped), the next command closes it.
	_ = child.Process.Kill()
	_ = child.Wait()
	if r := s.run(t, "", "--root", root, "--source-root", src, "events", "import", empty); r.code != 0 {
		t.Fatal(r.stderr)
	}
	out = listRuns(t, s, "--root", root, "--source-root", src)
	if out.Runs[3].RunID != id || out.Runs[3].Status != events.RunStatusInterrupted {
		t.Fatalf("dead run: %+v", out.Runs[3])
	}
}

// A running record carrying this process's own pid was left by an earlier
// process whose pid we now hold: it is dead, unless this process started it.
func TestRunOwnPIDReuseIsDead(t *testing.T) {
	s := newCLISession()
	src, root := runLedger(t, "p")
	id := startOrphan(t, s, root, src, os.Getpid())
	if r := s.run(t, "", "--root", root, "--source-root", src, "events", "import", emptyFile(t)); r.code != 0 {
		t.Fatal(r.stderr)
	}
	out := listRuns(t, s, "--root", root, "--source-root", src)
	if out.Runs[1].RunID != id || out.Runs[1].Status != events.RunStatusInterrupted {
		t.Fatalf("%+v", out.Runs)
	}
}

func TestRunScopeIsolation(t *testing.T) {
	s := newCLISession()
	srcA, root := runLedger(t, "a")
	srcB := t.TempDir()
	for _, src := range []string{srcA, srcB, srcB} {
		if r := s.run(t, "", "--root", root, "--source-root", src, "projections", "rebuild"); r.code != 0 {
			t.Fatal(r.stderr)
		}
	}
	a := listRuns(t, s, "--root", root, "--source-root", srcA)
	b := listRuns(t, s, "--root", root, "--source-root", srcB)
	if len(a.Runs) != 1 || len(b.Runs) != 2 || a.ScopeKey == b.ScopeKey {
		t.Fatalf("a %+v\nb %+v", a, b)
	}
	for _, r := range b.Runs {
		if r.ScopeKey != b.ScopeKey || r.RunID == a.Runs[0].RunID {
			t.Fatalf("scope b shows %+v", r)
		}
	}
	// A symlink to a project is the same project.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(srcA, link); err != nil {
		t.Fatal(err)
	}
	if l := listRuns(t, s, "--root", root, "--source-root", link); l.ScopeKey != a.ScopeKey || len(l.Runs) != 1 {
		t.Fatalf("via symlink: %+v", l)
	}

	// Two sessions of one harness in one project see only their own runs.
	g := s.globals(root, srcA)
	_ = g.setupLog()
	st, err := g.OpenStore(false)
	if err != nil {
		t.Fatal(err)
	}
	for _, sess := range []string{"session-1", "session-2", "session-2"} {
		scope, err := events.SessionScope("claude-code", sess)
		if err != nil {
			t.Fatal(err)
		}
		run, err := g.StartRun(context.Background(), st, RunSpec{Command: events.RunCmdIntegrationsHook, Scope: scope, Harness: "claude-code"})
		if err != nil {
			t.Fatal(err)
		}
		run.SetRecall(events.QueryClassStartupFallback, 0)
		if err := run.Finish(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	s1 := listRuns(t, s, "--root", root, "--harness", "claude-code", "--session-id", "session-1")
	s2 := listRuns(t, s, "--root", root, "--harness", "claude-code", "--session-id", "session-2")
	if len(s1.Runs) != 1 || len(s2.Runs) != 2 || s1.ScopeKey == s2.ScopeKey || s1.ScopeKey == a.ScopeKey {
		t.Fatalf("s1 %+v\ns2 %+v", s1, s2)
	}
	if r := s1.Runs[0]; r.Harness != "claude-code" || r.Telemetry == nil || r.Telemetry.QueryClass != events.QueryClassStartupFallback || *r.Telemetry.ResultCount != 0 {
		t.Fatalf("session run: %+v", r)
	}
	// The CLI scope of the project does not see the sessions' runs.
	if a2 := listRuns(t, s, "--root", root, "--source-root", srcA); len(a2.Runs) != 1 {
		t.Fatalf("project scope: %+v", a2.Runs)
	}
	// The auditor sees every scope, and can filter.
	var audit struct {
		Matched  int            `json:"matched"`
		Scopes   int            `json:"scopes"`
		ByStatus map[string]int `json:"by_status"`
		Runs     []runView      `json:"runs"`
	}
	r := s.run(t, "", "--root", root, "--json", "audit", "runs")
	if err := json.Unmarshal([]byte(r.stdout), &audit); err != nil || audit.Matched != 6 || audit.Scopes != 4 || audit.ByStatus["succeeded"] != 6 {
		t.Fatalf("audit runs: %v %s", err, r.stdout)
	}
	r = s.run(t, "", "--root", root, "--json", "audit", "runs", "--harness", "claude-code", "--limit", "2")
	if err := json.Unmarshal([]byte(r.stdout), &audit); err != nil || audit.Matched != 3 || len(audit.Runs) != 2 || audit.Runs[0].Harness != "claude-code" {
		t.Fatalf("audit runs --harness: %v %s", err, r.stdout)
	}
	if r := s.run(t, "", "--root", root, "audit", "runs", "--status", "bogus"); r.code != exitError {
		t.Fatalf("--status bogus: %d", r.code)
	}
}

func TestRunScopeFailsClosed(t *testing.T) {
	s := newCLISession()
	src, root := runProject(t, "p")
	missing := filepath.Join(t.TempDir(), "absent")
	file := emptyFile(t)
	for _, bad := range []string{missing, file, "bad\x01dir"} {
		r := s.run(t, "", "--root", root, "--source-root", bad, "projections", "rebuild")
		if r.code != exitError || !strings.Contains(r.stderr, "run scope: source root is") || strings.Contains(r.stderr, bad) {
			t.Errorf("source root %q: %d %q", bad, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Fatalf("a refused run created the store: %v", err)
	}
	_ = src
	cases := []struct{ harness, session string }{
		{"", "SESSION"}, {"Claude", "SESSION"}, {"claude-code", ""}, {"claude-code", " SESSION"}, {"claude-code", "SESSION\n"},
		{"claude-code", strings.Repeat("é", 257)}, {"claude-code", "trcap_v1_abc"}, {"claude-code", "\xff"},
	}
	for _, c := range cases {
		_, err := events.SessionScope(c.harness, c.session)
		var se *events.ScopeError
		if !errors.As(err, &se) || (c.session != "" && strings.Contains(err.Error(), c.session)) {
			t.Errorf("events.SessionScope(%q, %q) = %v", c.harness, c.session, err)
		}
	}
	if k, err := events.SessionScope("claude-code", strings.Repeat("é", 256)); err != nil || events.ValidScopeKey(k) != nil {
		t.Fatalf("256 characters: %q %v", k, err)
	}
	if r := s.run(t, "", "--root", root, "runs", "--harness", "claude-code"); r.code != exitError {
		t.Fatalf("--harness alone: %d", r.code)
	}
}

// A run event with a key outside its schema is refused on import, at the
// top level and nested, before anything is written.
func TestRunEventExtraKeyRejectedOnImport(t *testing.T) {
	s := newCLISession()
	src, root := runLedger(t, "p")
	if r := s.run(t, "", "--root", root, "--source-root", src, "projections", "rebuild"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	f := &events.Factory{Now: s.d.Now, NewID: s.d.NewID, Actor: "cli"}
	id := s.d.NewID().String()
	stream := events.RunStream(id)
	scope := strings.Repeat("ab", 12)
	started := f.Must(stream, events.TypeRunStarted, &events.RunStarted{RunID: id, ScopeKey: scope, Command: events.RunCmdCapture, Stage: "start", PID: 7, StartedAt: "2026-11-02T09:00:00.000Z"})
	one := 1
	finished := f.Must(stream, events.TypeRunFinished, &events.RunFinished{RunID: id, ScopeKey: scope, Status: events.RunStatusSucceeded, Stage: "done", EndedAt: "2026-11-02T09:00:01.000Z", Telemetry: &events.RunTelemetry{QueryClass: events.QueryClassTaskHint, ResultCount: &one}})
	seal := func(e events.Envelope, from, to string, prev string, pos uint64) []byte {
		e.Payload = []byte(strings.Replace(string(e.Payload), from, to, 1))
		e.Version, e.Position = pos, pos
		e.Seal(prev)
		return e.Encode()
	}
	for _, c := range []struct{ name, from, to, key string }{
		{"top", `"pid":7`, `"pid":7,"prompt":"fix the login bug"`, "prompt"},
		{"nested", `"result_count":1`, `"result_count":1,"memory_text":"x"`, "memory_text"},
	} {
		a := seal(started, "", "", events.GenesisHash, 1)
		var ea events.Envelope
		ea, _ = events.DecodeEnvelope(a)
		target, other := a, seal(finished, c.from, c.to, ea.Hash, 2)
		if c.name == "top" {
			target = seal(started, c.from, c.to, events.GenesisHash, 1)
			other = nil
		}
		file := filepath.Join(t.TempDir(), "run.ndjson")
		if err := os.WriteFile(file, append(append(target, '\n'), other...), 0o600); err != nil {
			t.Fatal(err)
		}
		r := s.run(t, "", "--root", root, "--source-root", src, "events", "import", file)
		if r.code != exitError || !strings.Contains(r.stderr, fmt.Sprintf("unknown key %q", c.key)) {
			t.Fatalf("%s: %d %q", c.name, r.code, r.stderr)
		}
		for _, e := range ledgerEvents(t, s, root) {
			if e.ID == started.ID {
				t.Fatalf("%s: the tampered run was imported", c.name)
			}
		}
	}
	// The same events without the extra keys import.
	a := seal(started, "", "", events.GenesisHash, 1)
	ea, _ := events.DecodeEnvelope(a)
	file := filepath.Join(t.TempDir(), "ok.ndjson")
	_ = os.WriteFile(file, append(append(a, '\n'), seal(finished, "", "", ea.Hash, 2)...), 0o600)
	if r := s.run(t, "", "--root", root, "--source-root", src, "events", "import", file); r.code != 0 {
		t.Fatalf("clean import: %s", r.stderr)
	}
}

// storeEvent is a stand-in for a command's own fact.
func storeEvent(f *events.Factory) events.Envelope {
	return f.Must(events.StoreStream, events.TypeStoreInitialized, &events.StoreInitialized{
		StoreID: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", Format: 1, ProjectRootFingerprint: strings.Repeat("ab", 32), CLIVersion: "0.1.0",
	})
}

// openRecorded opens a store and starts a run the way a command does.
func openRecorded(t testing.TB, s *cliSession, root, src string) (*Globals, *bolt.Store, *Run) {
	t.Helper()
	return openRecordedAs(t, s.globals(root, src))
}

// openRecordedAs is openRecorded with g's recorder.
func openRecordedAs(t testing.TB, g *Globals) (*Globals, *bolt.Store, *Run) {
	t.Helper()
	_ = g.setupLog()
	st, err := g.OpenStore(false)
	if err != nil {
		t.Fatal(err)
	}
	scope, err := g.CLIScope()
	if err != nil {
		t.Fatal(err)
	}
	run, err := g.StartRun(context.Background(), st, RunSpec{Command: events.RunCmdCapture, Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	return g, st, run
}

func countType(t *testing.T, st *bolt.Store, typ string) (n int, last events.Envelope) {
	t.Helper()
	err := st.ReadAll(context.Background(), 0, func(e *events.Envelope) error {
		if e.Type == typ {
			n++
			last = *e
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, last
}

func TestRunFinishInRidesTheCommandsCommit(t *testing.T) {
	ctx := context.Background()
	s := newCLISession()
	src, root := runLedger(t, "p")

	// Committed: run.finished is appended in the command's transaction,
	// right after its own event, and End adds nothing.
	g, st, run := openRecorded(t, s, root, src)
	f := g.Factory("cli")
	err := st.Update(ctx, func(tx *bolt.Tx) error {
		if _, err := tx.Append(events.StoreStream, bolt.AnyVersion, storeEvent(f)); err != nil {
			return err
		}
		return run.FinishIn(tx, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := st.Head()
	var cmdErr error = errors.New("printing the result failed")
	run.End(ctx, &cmdErr) // a later error does not rewrite a committed outcome
	if h, _, _ := st.Head(); h != head {
		t.Fatalf("End appended after a committed FinishIn (head %d -> %d)", head, h)
	}
	if n, last := countType(t, st, events.TypeRunFinished); n != 1 || last.Position != head {
		t.Fatalf("run.finished: %d, last at %d, head %d", n, last.Position, head)
	}
	st.Close()

	// Rolled back: the transaction that carried FinishIn failed, so End
	// records the failure on its own.
	_, st, run = openRecorded(t, s, root, src)
	defer st.Close()
	boom := &codedError{code: "receipt_write", err: errors.New("disk said no")}
	err = st.Update(ctx, func(tx *bolt.Tx) error {
		if err := run.FinishIn(tx, nil); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatal(err)
	}
	run.End(ctx, &err)
	n, last := countType(t, st, events.TypeRunFinished)
	p, _ := events.Payload[events.RunFinished](&last)
	if n != 2 || p.RunID != run.ID() || p.Status != events.RunStatusFailed || p.Diagnostic != "receipt_write" {
		t.Fatalf("after rollback: %d run.finished, last %+v", n, p)
	}
}

// codedError is a typed error that names its own diagnostic code.
type codedError struct {
	code string
	err  error
}

func (e *codedError) Error() string      { return e.err.Error() }
func (e *codedError) Diagnostic() string { return e.code }

// A run marked interrupted by another process (which took its pid for
// dead) still records its own outcome when it ends: the outcome wins.
func TestRunLateFinishAfterInterrupted(t *testing.T) {
	ctx := context.Background()
	s := newCLISession()
	src, root := runLedger(t, "p")
	gone := sleeper(t)
	_ = gone.Process.Kill()
	_ = gone.Wait()
	dead := s.globals(root, src)
	dead.PID = func() int { return gone.Process.Pid }
	_, st, run := openRecordedAs(t, dead)
	defer st.Close()
	// Another process's command (its own recorder, its own pid) starts in
	// the same scope and takes the run for dead.
	other := s.globals(root, src)
	_ = other.setupLog()
	scope, _ := other.CLIScope()
	next, err := other.StartRun(ctx, st, RunSpec{Command: events.RunCmdEventsImport, Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	if err := next.Finish(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n, last := countType(t, st, events.TypeRunInterrupted); n != 1 || last.Stream != events.RunStream(run.ID()) {
		t.Fatalf("run.interrupted: %d, last %+v", n, last)
	}
	run.SetItems(3)
	if err := run.Finish(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := run.Finish(ctx, nil); err != nil { // ended: a no-op
		t.Fatal(err)
	}
	st.Close()
	out := listRuns(t, s, "--root", root, "--source-root", src)
	if r := out.Runs[1]; r.RunID != run.ID() || r.Status != events.RunStatusSucceeded || *r.Telemetry.Items != 3 {
		t.Fatalf("%+v", r)
	}
	if v := s.run(t, "", "--root", root, "audit", "verify"); v.code != 0 {
		t.Fatal(v.stderr)
	}
}

// The privacy canary goes everywhere a user can put text: the project
// path, the import file's path and content, a session id. It must not
// reach any byte under the root nor any output of runs.
func TestRunPrivacyCanary(t *testing.T) {
	const canary = "CANARY-7f3e9b21-secret"
	s := newCLISession()
	src, root := runLedger(t, "proj-"+canary)
	dir := filepath.Join(t.TempDir(), canary)
	_ = os.Mkdir(dir, 0o700)
	bad := filepath.Join(dir, canary+".ndjson")
	_ = os.WriteFile(bad, []byte(`{"`+canary+`":"`+canary+`"}`+"\n"), 0o600)
	if r := s.run(t, "", "--root", root, "--source-root", src, "events", "import", bad); r.code != exitError {
		t.Fatalf("import: %d", r.code)
	}
	if r := s.run(t, canary, "--root", root, "--source-root", src, "events", "import", "-"); r.code != exitError {
		t.Fatalf("import stdin: %d", r.code)
	}
	if r := s.run(t, "", "--root", root, "--source-root", src, "events", "import", filepath.Join(dir, "absent-"+canary)); r.code != exitError {
		t.Fatalf("import absent: %d", r.code)
	}
	if r := s.run(t, "", "--root", root, "--source-root", src, "projections", "rebuild"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	_, st, run := openRecorded(t, s, root, src)
	scope, err := events.SessionScope("pi", "/home/u/.pi/sessions/"+canary+".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	g := s.globals(root, src)
	srun, err := g.StartRun(context.Background(), st, RunSpec{Command: events.RunCmdIntegrationsPreflight, Scope: scope, Harness: "pi"})
	if err != nil {
		t.Fatal(err)
	}
	srun.SetInput(runrec.InputDigest([]byte("task hint: " + canary)))
	srun.SetRecall(events.QueryClassTaskHint, 2)
	srun.SetReceipt("receipt-01")
	if err := srun.Finish(context.Background(), errors.New("recall failed near "+canary)); err != nil {
		t.Fatal(err)
	}
	if err := run.Finish(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	st.Close()

	var outputs []string
	for _, argv := range [][]string{
		{"--root", root, "--source-root", src, "runs"},
		{"--root", root, "--source-root", src, "--json", "runs", "50"},
		{"--root", root, "runs", "--harness", "pi", "--session-id", "/home/u/.pi/sessions/" + canary + ".jsonl"},
		{"--root", root, "--json", "runs", "--harness", "pi", "--session-id", "/home/u/.pi/sessions/" + canary + ".jsonl"},
		{"--root", root, "audit", "runs"},
		{"--root", root, "--json", "audit", "runs"},
		{"--root", root, "events"},
	} {
		r := s.run(t, "", argv...)
		if r.code != 0 {
			t.Fatalf("%v: %s", argv, r.stderr)
		}
		outputs = append(outputs, r.stdout)
	}
	if !strings.Contains(outputs[2], "failed (error)") || !strings.Contains(outputs[0], "projections rebuild") {
		t.Fatalf("the runs are not all listed:\n%s\n%s", outputs[0], outputs[2])
	}
	outBytes := 0
	for i, out := range outputs {
		outBytes += len(out)
		if strings.Contains(out, canary) || strings.Contains(out, "CANARY") {
			t.Errorf("output %d contains the canary:\n%s", i, out)
		}
	}
	files, fileBytes := 0, 0
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files, fileBytes = files+1, fileBytes+len(raw)
		if bytes.Contains(raw, []byte("CANARY")) {
			t.Errorf("%s contains the canary", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !t.Failed() {
		t.Logf("canary: runs: %d files (%d bytes) under the root and %d outputs (%d bytes) searched, 0 hits",
			files, fileBytes, len(outputs), outBytes)
	}
}

// BenchmarkRunRecorder measures what recording a run adds to a command
// whose work ends in one durable commit: "command" is that commit alone;
// "command+run" adds StartRun (the one extra commit) and rides run.finished
// on the command's commit with FinishIn.
func BenchmarkRunRecorder(b *testing.B) {
	for _, withRun := range []bool{false, true} {
		name := "command"
		if withRun {
			name = "command+run"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			src := b.TempDir()
			root := filepath.Join(src, ".tree-ring")
			g := &Globals{Flags: cli.Flags{Root: root, SourceRoot: src, LockTimeout: time.Second}, Clock: Clock{Now: time.Now, NewID: ulid.Make}}
			g.IO = IO{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
			_ = g.setupLog()
			st, err := g.OpenStore(false)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			scope, _ := g.CLIScope()
			f := g.Factory("cli")
			cpu0 := eventstest.CPUTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var run *Run
				if withRun {
					if run, err = g.StartRun(ctx, st, RunSpec{Command: events.RunCmdCapture, Scope: scope}); err != nil {
						b.Fatal(err)
					}
				}
				ev := storeEvent(f)
				err = st.Update(ctx, func(tx *bolt.Tx) error {
					if _, err := tx.Append(events.StoreStream, bolt.AnyVersion, ev); err != nil {
						return err
					}
					if run != nil {
						return run.FinishIn(tx, nil)
					}
					return nil
				})
				if run != nil {
					run.End(ctx, &err)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(eventstest.CPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// The setters take program-chosen values; a wrong one panics in tests
// instead of failing a command's final commit.
func TestRunSettersRejectProgrammingErrors(t *testing.T) {
	s := newCLISession()
	src, root := runLedger(t, "p")
	_, st, run := openRecorded(t, s, root, src)
	defer st.Close()
	for name, f := range map[string]func(){
		"stage with a space":  func() { run.SetStage("read input") },
		"query class unknown": func() { run.SetRecall("my task", 1) },
		"result count":        func() { run.SetRecall(events.QueryClassTaskHint, -1) },
		"receipt path":        func() { run.SetReceipt("a/b") },
		"input digest":        func() { run.SetInput("abc", 3) },
		"items":               func() { run.SetItems(-1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
	// Rejected values left nothing behind.
	run.SetStage("publish")
	run.SetItems(2)
	if err := run.Finish(context.Background(), errors.New("x")); err != nil {
		t.Fatal(err)
	}
	_, last := countType(t, st, events.TypeRunFinished)
	p, _ := events.Payload[events.RunFinished](&last)
	if p.Stage != "publish" || p.Telemetry == nil || *p.Telemetry.Items != 2 || p.Telemetry.QueryClass != "" || p.Telemetry.ReceiptID != "" {
		t.Fatalf("%+v %+v", p, p.Telemetry)
	}
}

// BenchmarkRunLedgerRebuild refolds a ledger of bigLedgerEvents run events
// (the run ledger is the only projection folding them) and reports events
// per second.
func BenchmarkRunLedgerRebuild(b *testing.B) {
	path := filepath.Join(b.TempDir(), "ledger.db")
	bigLedger(b, path)
	st, err := bolt.Open(path, bolt.Options{Projections: projections.All()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	cpu0 := eventstest.CPUTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := st.Rebuild(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(bigLedgerEvents) * float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "events/s")
	// CPU time per event is steadier than wall time on a shared machine.
	b.ReportMetric(float64(eventstest.CPUTime()-cpu0)/n, "cpu-ns/event")
}
