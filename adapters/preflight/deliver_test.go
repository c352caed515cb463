package preflight_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/receipt"
)

// fakeStore is a preflight.Store whose one transaction is a fakeTx over
// fakeLedger: it records the calls in order and commits when fn succeeds.
type fakeStore struct {
	*fakeLedger
	calls     []string
	committed bool
	visible   bool // MayBeVisible's answer
}

func (s *fakeStore) Update(_ context.Context, fn func(preflight.Tx) error) error {
	if err := fn(fakeTx{s}); err != nil {
		return err
	}
	s.committed = true
	return nil
}

func (s *fakeStore) MayBeVisible(error) bool { return s.visible }

type fakeTx struct{ *fakeStore }

func (t fakeTx) call(s string) { t.calls = append(t.calls, s) }

func (t fakeTx) Program() (*events.ProgramIdentity, error) { t.call("program"); return nil, nil }
func (t fakeTx) Append(stream string, evs []events.Envelope) error {
	t.call("append " + stream)
	return nil
}
func (t fakeTx) Retained(string, string) (func(string) bool, bool, error) {
	t.call("retained")
	return func(string) bool { return false }, true, nil
}
func (t fakeTx) StartRun() error                    { t.call("start"); return nil }
func (t fakeTx) SetStage(s string)                  { t.call("stage " + s) }
func (t fakeTx) FinishRun(rc receipt.Receipt) error { t.call("finish"); return nil }

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// Deliver before acknowledging: the output is written inside the
// transaction, after the receipt file; a failed write or commit leaves no
// file unless the commit may be visible.
func TestDeliver(t *testing.T) {
	for _, c := range []struct {
		name     string
		out      func() *bytes.Buffer // nil: a writer failing with EIO
		fault    error
		visible  bool
		wantErr  string
		commit   bool
		fileKept bool
	}{
		{name: "delivered", out: func() *bytes.Buffer { return &bytes.Buffer{} }, commit: true, fileKept: true},
		{name: "output fails", wantErr: "write the output: input/output error; no receipt recorded"},
		{name: "commit fails after the output", out: func() *bytes.Buffer { return &bytes.Buffer{} }, fault: syscall.EIO, wantErr: "input/output error"},
		{name: "commit may be visible", out: func() *bytes.Buffer { return &bytes.Buffer{} }, fault: syscall.EIO, visible: true, wantErr: "input/output error", fileKept: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			j, l := job(t, "codex")
			dir := t.TempDir()
			root, err := adapters.OpenProjectRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			st := &fakeStore{fakeLedger: l, visible: c.visible}
			d := preflight.Delivery{Job: j, Deps: deps(), Root: root, Out: failingWriter{syscall.EIO},
				Render: func(p preflight.Plan) []byte { return []byte(p.Context) }}
			var out *bytes.Buffer
			if c.out != nil {
				out = c.out()
				d.Out = out
			}
			if c.fault != nil {
				d.Fault = func() error { return c.fault }
			}
			printed, err := preflight.Deliver(context.Background(), st, d)
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || err.Error() != c.wantErr) {
				t.Fatalf("err %v, want %q", err, c.wantErr)
			}
			var oe *preflight.OutputError
			if errors.As(err, &oe) != (c.out == nil) {
				t.Errorf("err %v: an *OutputError only for a failed write", err)
			}
			if !printed || st.committed != c.commit {
				t.Errorf("printed %v committed %v, want true %v", printed, st.committed, c.commit)
			}
			want := []string{"start", "program", "append " + events.HarnessStream("codex"), "finish", "retained", "stage deliver"}
			if !slices.Equal(st.calls, want) {
				t.Errorf("calls %v, want %v", st.calls, want)
			}
			files, _ := filepath.Glob(filepath.Join(dir, receipt.Dir, "codex", "*", "*"))
			if kept := len(files) == 1; kept != c.fileKept {
				t.Errorf("receipt files %v, want kept %v", files, c.fileKept)
			}
			if c.fileKept {
				body, _ := os.ReadFile(files[0])
				if !strings.Contains(string(body), `"harness_id": "codex"`) {
					t.Errorf("receipt file %s", body)
				}
			}
			if out != nil && !strings.HasPrefix(out.String(), "Tree Ring Memory scoped preflight recall:") {
				t.Errorf("output %q", out)
			}
		})
	}
}
