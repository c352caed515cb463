package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
)

// exportFile writes n sealed, chained envelopes (positions 1..n, as another
// host's `tree-ring events` would print them) with ids unique to host, and
// returns the path.
func exportFile(t *testing.T, dir string, host, n int) string {
	t.Helper()
	day := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	f := &events.Factory{
		Now:   eventstest.Clock(day, time.Microsecond),
		NewID: eventstest.IDsAt(day, uint32(host)<<24),
		Actor: fmt.Sprintf("host-%d", host),
	}
	var b strings.Builder
	prev := events.GenesisHash
	for i := 1; i <= n; i++ {
		// One run record per event: a valid run.started on its own run stream.
		var rid ulid.ULID
		rid[6] = byte(host)
		binary.BigEndian.PutUint64(rid[8:], uint64(i))
		stream := events.RunStream(rid.String())
		e := f.Must(stream, events.TypeRunStarted, &events.RunStarted{
			RunID: rid.String(), ScopeKey: "0123456789abcdef01234567", Command: events.RunCmdEventsImport,
			Stage: "start", PID: 1, StartedAt: "2026-11-02T00:00:00.000Z",
		})
		e.Version, e.Position = 1, uint64(i)
		e.Seal(prev)
		prev = e.Hash
		b.Write(e.Encode())
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, fmt.Sprintf("host-%d.ndjson", host))
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ledgerState is what must not change when a command is refused: the
// export and the ledger file's bytes.
func ledgerState(t *testing.T, root string) string {
	t.Helper()
	r := runCLI(t, "", "--root", root, "events")
	b, err := os.ReadFile(filepath.Join(root, bolt.LedgerFile))
	sum := sha256.Sum256(b)
	return fmt.Sprintf("events exit %d:\n%s\nledger %s %v", r.code, r.stdout, hex.EncodeToString(sum[:]), err)
}

// assertRefused checks the shape of a handled error: the exit code, one
// line on stderr naming want, nothing on stdout.
func assertRefused(t *testing.T, r result, code int, want ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d (stderr %q)", r.code, code, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout %q, want nothing", r.stdout)
	}
	if !strings.HasPrefix(r.stderr, "tree-ring: ") || strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") {
		t.Errorf("stderr %q is not one line", r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q does not mention %q", r.stderr, w)
		}
	}
}

func TestEventsImportBadInput(t *testing.T) {
	sample, err := os.ReadFile(sampleLedger)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(sample), "\n"), "\n")
	other := exportFile(t, t.TempDir(), 9, 3)
	otherLines, _ := os.ReadFile(other)
	ol := strings.Split(strings.TrimSuffix(string(otherLines), "\n"), "\n")
	// A line with the id of sample line 2 but other content, re-sealed so
	// that only the conflict is wrong.
	conflict, err := events.DecodeEnvelope([]byte(lines[1]))
	if err != nil {
		t.Fatal(err)
	}
	conflict.Actor = "someone-else"
	conflict.Seal(conflict.PrevHash)
	conflictLine := string(conflict.Encode())
	// Line 2 of the other export, re-sealed on a wrong prev_hash: its own
	// hash is right, the link to line 1 is not.
	unlinked, err := events.DecodeEnvelope([]byte(ol[1]))
	if err != nil {
		t.Fatal(err)
	}
	unlinked.Seal(strings.Repeat("ab", 32))
	unlinkedLine := string(unlinked.Encode())

	cases := []struct {
		name    string
		content string
		want    []string
	}{
		{"not an envelope", ol[0] + "\nhello\n", []string{":2: ", "invalid JSON"}},
		{"not JSON object", ol[0] + "\n[1,2]\n", []string{":2: ", "want object, got array"}},
		{"unknown key", strings.Replace(ol[0], `{"id"`, `{"host":"x","id"`, 1) + "\n", []string{":1: ", `unknown key "host"`}},
		{"unknown payload key", ol[0] + "\n\n" + strings.Replace(ol[1], `"payload":{`, `"payload":{"prompt":"secret",`, 1) + "\n", []string{":3: ", `unknown key "prompt"`}},
		{"duplicate key", strings.Replace(ol[0], `{"id"`, `{"actor":"x","id"`, 1) + "\n", []string{":1: ", `duplicate key "actor"`}},
		{"bad hash", ol[0] + "\n" + strings.Replace(ol[1], `"pid":1`, `"pid":2`, 1) + "\n", []string{":2: ", "bad hash"}},
		{"missing key", strings.Replace(ol[0], `"actor":"host-9",`, ``, 1) + "\n", []string{":1: ", `missing key "actor"`}},
		{"broken chain", ol[0] + "\n" + unlinkedLine + "\n", []string{":2: ", "prev_hash does not link"}},
		{"conflicting id", ol[2] + "\n\n" + conflictLine + "\n", []string{":3: ", "already exists at position 2 with different content"}},
		{"line too long", ol[0] + "\n" + strings.Repeat(" ", events.MaxEnvelopeBytes+1) + "x\n", []string{":2: ", "line longer than"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := sampleRoot(t)
			before := ledgerState(t, root)
			file := filepath.Join(t.TempDir(), "in.ndjson")
			if err := os.WriteFile(file, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			r := runCLI(t, "", "--root", root, "events", "import", file)
			assertRefused(t, r, exitError, append([]string{file}, c.want...)...)
			if after := ledgerState(t, root); after != before {
				t.Fatalf("the ledger changed:\n%s\n---\n%s", before, after)
			}
			// Through stdin the input is named "-".
			r = runCLI(t, c.content, "--root", root, "events", "import", "-")
			assertRefused(t, r, exitError, append([]string{"-:"}, c.want[0])...)
		})
	}
	t.Run("conflicting id in the file names both lines", func(t *testing.T) {
		root := checkedRoot(t)
		twin, err := events.DecodeEnvelope([]byte(ol[1]))
		if err != nil {
			t.Fatal(err)
		}
		twin.Actor, twin.Position = "host-8", 7
		twin.Seal(strings.Repeat("cd", 32))
		content := ol[0] + "\n" + ol[1] + "\n\n" + string(twin.Encode()) + "\n"
		r := runCLI(t, content, "--root", root, "events", "import", "-")
		assertRefused(t, r, exitError, "-:4: event id "+twin.ID.String()+" appears on line 2 with different content")
	})
}

func TestEventsImportFileErrors(t *testing.T) {
	root := checkedRoot(t)
	missing := filepath.Join(t.TempDir(), "nope.ndjson")
	assertRefused(t, runCLI(t, "", "--root", root, "events", "import", missing), exitError, missing, "no such file")
	dir := t.TempDir()
	assertRefused(t, runCLI(t, "", "--root", root, "events", "import", dir), exitError, dir, "is a directory")
	assertRefused(t, runCLI(t, "", "--root", root, "events", "import"), exitError, "exactly one FILE")
	if _, err := os.Stat(root); err == nil {
		t.Fatal("a refused import created the root")
	}
	r := runCLI(t, "\n\n", "--root", root, "events", "import", "-")
	if r.code != 0 || r.stdout != "imported 0, skipped 0 duplicates\n" {
		t.Fatalf("empty input: %+v", r)
	}
}

func TestReadEnvelopesLimit(t *testing.T) {
	sample, _ := os.ReadFile(sampleLedger)
	if _, _, err := readEnvelopes(strings.NewReader(string(sample)), "in", int64(len(sample))); err != nil {
		t.Fatalf("exact size: %v", err)
	}
	_, _, err := readEnvelopes(strings.NewReader(string(sample)), "in", int64(len(sample)-1))
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("over the limit: %v", err)
	}
}

// TestReadEnvelopesManyChunks decodes across several parallel chunks and
// reports the first bad line, not the first one a worker finished.
func TestReadEnvelopesManyChunks(t *testing.T) {
	one, _ := os.ReadFile(exportFile(t, t.TempDir(), 1, 1))
	per := decodeChunkBytes / len(one) // about the lines of one chunk
	path := exportFile(t, t.TempDir(), 1, 3*per+10)
	b, _ := os.ReadFile(path)
	envs, lines, err := readEnvelopes(strings.NewReader(string(b)), "in", 1<<30)
	if err != nil || len(envs) != 3*per+10 || lines[len(lines)-1] != len(envs) {
		t.Fatalf("%d envelopes, %v", len(envs), err)
	}
	for i := range envs {
		if envs[i].Position != uint64(i+1) {
			t.Fatalf("envelope %d out of order", i)
		}
	}
	// In the third chunk, then in the second: the second's is reported.
	all := strings.Split(string(b), "\n")
	all[2*per+per/2] = "bad"
	all[per+per/2] = "worse"
	_, _, err = readEnvelopes(strings.NewReader(strings.Join(all, "\n")), "in", 1<<30)
	if want := fmt.Sprintf("in:%d: ", per+per/2+1); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %v, want it at %q", err, want)
	}
}

// FuzzImportLines feeds arbitrary input to `events import`'s reader: it
// never panics, errors name a line on one line, and what it accepts
// re-encodes to lines it accepts again.
func FuzzImportLines(f *testing.F) {
	sample, _ := os.ReadFile(sampleLedger)
	f.Add(sample)
	f.Add([]byte("\n\n"))
	f.Add([]byte("{}\n"))
	f.Add([]byte(strings.SplitN(string(sample), "\n", 2)[0]))
	f.Fuzz(func(t *testing.T, data []byte) {
		envs, lines, err := readEnvelopes(strings.NewReader(string(data)), "in", 1<<20)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "in") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("bad error %q", err)
			}
			return
		}
		if len(lines) != len(envs) {
			t.Fatal("lines and envelopes differ")
		}
		var b strings.Builder
		for i := range envs {
			b.Write(envs[i].Encode())
			b.WriteByte('\n')
		}
		again, _, err := readEnvelopes(strings.NewReader(b.String()), "again", 1<<20)
		if err != nil || len(again) != len(envs) {
			t.Fatalf("re-encoded input refused: %v", err)
		}
	})
}

// TestConcurrentImportProcesses runs 4 `tree-ring events import` processes
// at once, each with 250 different events: the ledger ends with positions
// 1..1000 without gaps, every event once, and verifies.
func TestConcurrentImportProcesses(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	root := filepath.Join(dir, ".tree-ring")
	files := make([]string, 4)
	for i := range files {
		files[i] = exportFile(t, dir, i+1, 250)
	}
	var wg sync.WaitGroup
	outs := make([]string, len(files))
	errs := make([]error, len(files))
	for i, file := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := exec.Command(bin, "--root", root, "--lock-timeout", "60s", "events", "import", file).CombinedOutput()
			outs[i], errs[i] = string(out), err
		}()
	}
	wg.Wait()
	for i := range files {
		if errs[i] != nil || outs[i] != "imported 250, skipped 0 duplicates\n" {
			t.Fatalf("process %d: %v %q", i, errs[i], outs[i])
		}
	}
	out, err := exec.Command(bin, "--root", root, "events").Output()
	if err != nil {
		t.Fatal(err)
	}
	// 1,000 imported events plus each process's run record (started and
	// finished), gapless.
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 1000+2*len(files) {
		t.Fatalf("%d events", len(lines))
	}
	ids := map[string]bool{}
	for i, l := range lines {
		e, err := events.DecodeEnvelope([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		if e.Position != uint64(i+1) {
			t.Fatalf("line %d has position %d", i+1, e.Position)
		}
		if e.Actor != "cli" {
			ids[e.ID.String()] = true
		}
	}
	if len(ids) != 1000 {
		t.Fatalf("%d distinct imported ids", len(ids))
	}
	if out, err := exec.Command(bin, "--root", root, "audit", "verify").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "verified: 1008 events in 1004 streams") {
		t.Fatalf("verify: %v %s", err, out)
	}
	t.Logf("import: %d processes x 250 events, %d events at positions 1..%d without gaps, %d distinct imported ids, verify passed",
		len(files), len(lines), len(lines), len(ids))
}

// A project store imports only its own events: another project's export is
// refused before anything is written, naming the foreign store id, and
// the project keeps working; its own export imports nothing; a newer export
// of itself onto a copy restored from an older backup continues its chain.
func TestEventsImportForeignLedger(t *testing.T) {
	a, b := newHP(t, ".codex"), newHP(t, ".codex")
	b.n = 50_000_000 // b's event ids differ from a's
	a.init()
	b.init()
	storeOf := func(p *hp) string {
		var s statusOut
		if err := json.Unmarshal([]byte(p.ok("", "--json", "integrations", "status")), &s); err != nil || s.StoreID == "" {
			t.Fatalf("status: %v", err)
		}
		return s.StoreID
	}
	export := func(p *hp, name string) string {
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, []byte(p.ok("", "events")), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	aRoot := filepath.Join(a.dir, ".tree-ring")
	foreign := export(b, "b.ndjson")
	before := ledgerState(t, aRoot)
	r := a.run("", "events", "import", foreign)
	assertRefused(t, r, exitError, foreign+":1:", "the export is of store "+storeOf(b)+", not this store "+storeOf(a))
	if after := ledgerState(t, aRoot); after != before {
		t.Fatal("a refused import changed the ledger")
	}
	// Another store's events without its store.initialized line.
	lines := strings.SplitAfterN(b.ok("", "events"), "\n", 2)
	tail := filepath.Join(t.TempDir(), "b-tail.ndjson")
	if err := os.WriteFile(tail, []byte(lines[1]), 0o600); err != nil {
		t.Fatal(err)
	}
	assertRefused(t, a.run("", "events", "import", tail), exitError, tail+":1:", "not of this store "+storeOf(a))
	if after := ledgerState(t, aRoot); after != before {
		t.Fatal("a refused import changed the ledger")
	}
	if r := a.hook("codex", a.payload("codex", "session-start.json", nil)); r.code != 0 {
		t.Fatalf("hook after the refused import: %s", r.stderr)
	}

	// Its own export: nothing imported (the import's own run is recorded).
	own := export(a, "a.ndjson")
	n := len(a.eventTypes())
	if out := a.ok("", "events", "import", own); out != fmt.Sprintf("imported 0, skipped %d duplicates\n", n) {
		t.Fatalf("own export: %q", out)
	}
	// Restore an older copy of the ledger, then import the newer export.
	ledger := filepath.Join(aRoot, bolt.LedgerFile)
	old, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	oldN := len(a.eventTypes())
	if r := a.hook("codex", a.payload("codex", "session-start.json", nil)); r.code != 0 {
		t.Fatal(r.stderr)
	}
	newer := export(a, "a-newer.ndjson")
	want := a.eventTypes()
	if err := os.WriteFile(ledger, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := a.ok("", "events", "import", newer); !strings.HasPrefix(out, "imported ") || strings.HasPrefix(out, "imported 0,") {
		t.Fatalf("newer own export: %q", out)
	}
	a.ok("", "audit", "verify")
	// The old copy, the import's run.started, the newer events in order,
	// its run.finished, the revocation of the proof they brought.
	want = slices.Concat(want[:oldN], []string{"run.started"}, want[oldN:], []string{"run.finished", "harness.proof_revoked"})
	if got := a.eventTypes(); !slices.Equal(got, want) {
		t.Errorf("after the restore: %v, want %v and the import's run", got, want)
	}
	// Restored receipts are history, not this machine's proof (issue 24
	// finding 2): awaiting proof until a session here proves it.
	if got := a.state("codex"); got != "configured-awaiting-proof" {
		t.Errorf("status %s after the restore", got)
	}
	if r := a.hook("codex", a.payload("codex", "session-start.json", nil)); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if got := a.state("codex"); got != "active" {
		t.Errorf("status %s after a session here", got)
	}
}
