package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/strictjson"
	"github.com/tree-ring/tree-ring/fsm"
	"github.com/tree-ring/tree-ring/fsm/fixture"
)

func fixturePath(name string) string { return filepath.Join(fixturesDir, name+".ndjson") }

func decodeReplayJSON(t *testing.T, out string) replayJSON {
	t.Helper()
	var r replayJSON
	if err := strictjson.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("audit replay --json output does not decode strictly: %v\n%s", err, out)
	}
	return r
}

// gotFromJSON adapts the --json output to the fixture comparison.
func gotFromJSON(r replayJSON) map[string]fixture.Got {
	out := map[string]fixture.Got{}
	for _, h := range r.Harnesses {
		g := fixture.Got{State: h.State}
		for _, s := range h.Steps {
			g.Steps = append(g.Steps, fixture.Step{Position: s.Position, At: s.RecordedAt, Transition: s.Transition, From: s.From, To: s.To, Derived: s.Derived})
		}
		out[h.HarnessID] = g
	}
	return out
}

// Every fixture, every check, through the command line.
func TestAuditReplayFixtures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(fixturesDir, "*.expect.json"))
	if len(files) < 12 {
		t.Fatalf("%d fixtures", len(files))
	}
	// --from-file never opens or creates a ledger.
	root := filepath.Join(t.TempDir(), "absent", ".tree-ring")
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".expect.json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			x, err := fixture.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range x.Checks {
				r := runCLI(t, "", "--root", root, "--json", "audit", "replay", "--from-file", fixturePath(name), "--at", c.At.Format(time.RFC3339Nano))
				if c.Error != nil {
					want := fmt.Sprintf(":%d: replay: position %d (", c.Error.Position, c.Error.Position)
					if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, string(c.Error.Kind)) || !strings.Contains(r.stderr, "harness "+c.Error.Harness) {
						t.Fatalf("at %s: code %d stdout %q stderr %q, want the error naming line and position %d", c.At, r.code, r.stdout, r.stderr, c.Error.Position)
					}
					continue
				}
				if r.code != 0 {
					t.Fatalf("at %s: code %d: %s", c.At, r.code, r.stderr)
				}
				out := decodeReplayJSON(t, r.stdout)
				if !out.At.Equal(c.At) || out.Source != "file" {
					t.Errorf("at %s, source %s", out.At, out.Source)
				}
				if err := c.Compare(gotFromJSON(out)); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Dir(root)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("--from-file created %s: %v", filepath.Dir(root), err)
	}
}

// importFixture makes a ledger from a fixture, in a scratch root: a
// fixture's store names another project root, which a project's
// .tree-ring refuses (TestEventsImportForeignRootIntoFreshCheckout).
func importFixture(t *testing.T, name string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "store")
	if r := runCLI(t, "", "--root", root, "events", "import", fixturePath(name)); r.code != 0 {
		t.Fatalf("import %s: %s", name, r.stderr)
	}
	return root
}

// The same ledger, replayed at two instants one second apart across the
// receipt's 30-day boundary, gives two states; replay never writes.
func TestAuditReplayAtAcrossTheBoundary(t *testing.T) {
	root := importFixture(t, "receipt-expired")
	ledger := filepath.Join(root, "ledger.db")
	before, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	state := func(at string) (fsm.State, []stepJSON) {
		r := runCLI(t, "", "--root", root, "--json", "audit", "replay", "--harness", "claude-code", "--at", at)
		if r.code != 0 {
			t.Fatalf("at %s: %s", at, r.stderr)
		}
		out := decodeReplayJSON(t, r.stdout)
		if len(out.Harnesses) != 1 || out.Source != "ledger" {
			t.Fatalf("at %s: %+v", at, out)
		}
		return out.Harnesses[0].State, out.Harnesses[0].Steps
	}
	// The receipt was recorded at 2026-09-01T10:00:05Z.
	s1, steps1 := state("2026-10-01T10:00:04Z")
	s2, steps2 := state("2026-10-01T12:00:05+02:00") // the same boundary instant, another offset
	if s1 != fsm.Active || s2 != fsm.ConfiguredAwaitingProof {
		t.Fatalf("across the boundary: %s then %s", s1, s2)
	}
	last := steps2[len(steps2)-1]
	if len(steps2) != len(steps1)+1 || !last.Derived || last.Position != 0 || last.Transition != fsm.Expire || !last.RecordedAt.Equal(time.Date(2026, 10, 1, 10, 0, 5, 0, time.UTC)) {
		t.Fatalf("derived step %+v", last)
	}
	after, _ := os.ReadFile(ledger)
	if !bytes.Equal(before, after) {
		t.Fatal("audit replay changed the ledger")
	}
}

func TestAuditReplayHuman(t *testing.T) {
	root := importFixture(t, "agent-zero-plugin")
	r := runCLI(t, "", "--root", root, "audit", "replay", "--at", "2026-09-01T12:00:00Z")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	golden(t, "audit_replay_agent_zero.txt", []byte(r.stdout))
	// Later events are counted, not shown.
	if !strings.Contains(r.stdout, "(6 events replayed, 1 recorded later not replayed)") {
		t.Errorf("later events: %s", r.stdout)
	}

	// Without --at the instant is now (the injected clock).
	r = runCLI(t, "", "--root", root, "--json", "audit", "replay")
	out := decodeReplayJSON(t, r.stdout)
	if !out.At.Equal(time.Date(2026, 11, 1, 12, 0, 1, 0, time.UTC)) || out.Harnesses[0].State != fsm.NeedsPlugin {
		t.Fatalf("default instant: %s %s", out.At, out.Harnesses[0].State)
	}

	// Several harnesses, sorted by id, and the human form of expiry.
	r = runCLI(t, "", "audit", "replay", "--from-file", fixturePath("unsupported-harnesses"), "--at", "2026-09-02T00:00:00Z")
	var heads []string
	for _, l := range strings.Split(r.stdout, "\n") {
		if l != "" && !strings.HasPrefix(l, " ") {
			heads = append(heads, l)
		}
	}
	if r.code != 0 || strings.Join(heads, "|") != "goose: unsupported at 2026-09-02T00:00:00Z (1 events replayed)|hermes: unsupported at 2026-09-02T00:00:00Z (1 events replayed)|opencode: unsupported at 2026-09-02T00:00:00Z (1 events replayed)" {
		t.Fatalf("%d %q %s", r.code, heads, r.stderr)
	}
	r = runCLI(t, "", "audit", "replay", "--from-file", fixturePath("two-workers"), "--at", "2026-10-12T00:00:00Z")
	golden(t, "audit_replay_two_workers_expired.txt", []byte(r.stdout))
}

func TestAuditReplayErrors(t *testing.T) {
	root := importFixture(t, "install-to-active")
	tmp := t.TempDir()
	src, err := os.ReadFile(fixturePath("drift-after-receipt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(src), "\n"), "\n")
	write := func(name string, ls ...string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(strings.Join(ls, "")), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	swapped := write("swapped.ndjson", lines[0], lines[1], lines[2], lines[3], lines[5], lines[4], lines[6])
	tampered := write("tampered.ndjson", lines[0], lines[1], strings.Replace(lines[2], `"changed_paths":[`, `"changed_paths":[".git/x",`, 1))
	unlinked := write("unlinked.ndjson", lines[0], lines[1], lines[3])
	// reseal re-chains a line onto prev with a valid own hash, so only the
	// link (not the line) is wrong.
	reseal := func(line, prev string) string {
		e, err := events.DecodeEnvelope([]byte(strings.TrimSpace(line)))
		if err != nil {
			t.Fatal(err)
		}
		e.Seal(prev)
		return string(e.Encode()) + "\n"
	}
	noGenesis := write("nogenesis.ndjson", reseal(lines[0], strings.Repeat("1", 64)))
	badLink := write("badlink.ndjson", lines[0], reseal(lines[1], strings.Repeat("2", 64)))
	unknownKey := write("unknown.ndjson", strings.Replace(lines[0], `"actor":`, `"prompt":"x","actor":`, 1))
	long := write("long.ndjson", strings.Repeat(" ", events.MaxEnvelopeBytes+10)+"\n")

	cases := []struct {
		args []string
		want string
	}{
		{[]string{"audit", "replay", "--at", "yesterday"}, `--at "yesterday": want an RFC3339 instant`},
		{[]string{"audit", "replay", "--harness", "pi"}, `no events for harness "pi"`},
		{[]string{"audit", "replay", "--harness", "../codex"}, `--harness "../codex" is not a harness id`},
		{[]string{"audit", "replay", "extra"}, "audit replay takes no arguments"},
		{[]string{"audit", "replay", "--from-file", filepath.Join(tmp, "none.ndjson")}, "open event file"},
		{[]string{"audit", "replay", "--from-file", swapped}, "swapped.ndjson:5: replay: position 6 (receipt.recorded, harness claude-code version 5): out-of-order: version 5 follows version 3"},
		{[]string{"audit", "replay", "--from-file", tampered}, "tampered.ndjson:3: envelope at position 3: bad hash"},
		{[]string{"audit", "replay", "--from-file", unlinked}, "unlinked.ndjson:3: replay: position 4 (preflight.started, harness claude-code version 3): out-of-order: version 3 follows version 1"},
		{[]string{"audit", "replay", "--from-file", noGenesis}, "nogenesis.ndjson:1: position 1 does not start the chain"},
		{[]string{"audit", "replay", "--from-file", badLink}, "badlink.ndjson:2: position 2: prev_hash does not link to position 1"},
		{[]string{"audit", "replay", "--from-file", unknownKey}, `unknown.ndjson:1: envelope: unknown key "prompt"`},
		{[]string{"audit", "replay", "--from-file", long}, "long.ndjson:1: line longer than"},
		{[]string{"--root", filepath.Join(tmp, "nothing"), "audit", "replay"}, "nothing"},
	}
	for _, c := range cases {
		args := append([]string{"--root", root}, c.args...)
		r := runCLI(t, "", args...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, c.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: code %d stdout %q stderr %q, want %q", c.args, r.code, r.stdout, r.stderr, c.want)
		}
	}
	// Stdin works as a file.
	r := runCLI(t, string(src), "--json", "audit", "replay", "--from-file", "-", "--at", "2026-09-03T00:00:00Z")
	if r.code != 0 || decodeReplayJSON(t, r.stdout).Harnesses[0].State != fsm.NeedsUserReview {
		t.Errorf("stdin: %d %s", r.code, r.stderr)
	}
}

func TestBoundedReader(t *testing.T) {
	for _, c := range []struct {
		size, limit int
		tooLarge    bool
	}{{10, 10, false}, {11, 10, true}, {0, 10, false}, {9, 10, false}} {
		b := &boundedReader{r: strings.NewReader(strings.Repeat("x", c.size)), left: int64(c.limit)}
		got, err := io.ReadAll(b)
		if c.tooLarge != errors.Is(err, errFileTooLarge) || (!c.tooLarge && (err != nil || len(got) != c.size)) {
			t.Errorf("size %d limit %d: %d bytes, %v", c.size, c.limit, len(got), err)
		}
	}
}

// FuzzReadEventFile: arbitrary event files never panic the reader or the
// replayer, and every failure names the file.
func FuzzReadEventFile(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixturesDir, "*.ndjson"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("{}\n"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fsm.NewReplayer(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
		err := readEventFile(bytes.NewReader(data), "fuzz.ndjson", r.Apply)
		if err != nil && !strings.HasPrefix(err.Error(), "fuzz.ndjson") && !strings.HasPrefix(err.Error(), "read fuzz.ndjson") {
			t.Fatalf("error does not name the file: %v", err)
		}
		if err == nil {
			for _, h := range r.Finish() {
				if !fsm.Valid(h.State) {
					t.Fatalf("state %q", h.State)
				}
			}
		}
	})
}
