package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events/memory"
)

const rustExport = "../../testdata/memory/rust-export.jsonl"

// memoryLines returns the memory lines of an export (the header carries
// the export time).
func memoryLines(t *testing.T, export string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(export, "\n"), "\n")
	if !strings.HasPrefix(lines[0], `{"type":"tree_ring_memory_export","schema_version":1,`) {
		t.Fatalf("header %q", lines[0])
	}
	return lines[1:]
}

func TestImportRustExportAndRoundTrip(t *testing.T) {
	a := newMemCLI(t)
	// The published fields, then the ledger's size (compacthint_test.go).
	if out := a.ok("--json", "import", rustExport); !strings.HasPrefix(out, `{"ok":true,"valid":6,"inserted":6,"replaced":0,"skipped_duplicates":0,"dry_run":false,"ledger_bytes":`) {
		t.Fatalf("import: %s", out)
	}
	a.verify()
	// Re-import: every id is a duplicate, nothing is appended.
	n := len(a.events())
	if out := a.ok("import", rustExport); out != "Tree Ring Memory import complete: valid=6 inserted=0 replaced=0 skipped_duplicates=6 dry_run=false\n" {
		t.Fatalf("re-import: %s", out)
	}
	if len(a.events()) != n {
		t.Fatal("re-import appended")
	}
	all := a.ok("export", "--include-sensitive", "--include-superseded")
	lines := memoryLines(t, all)
	if len(lines) != 6 {
		t.Fatalf("%d lines", len(lines))
	}
	// Imported as published: the legacy row got its synthesized identity,
	// timestamps are normalized, the relation survives.
	if !strings.Contains(all, `"session_id":"legacy-session-`) || !strings.Contains(all, `"review_reason":"legacy private-scope identity synthesized during portability normalization"`) ||
		!strings.Contains(all, `"created_at":"2026-06-01T00:00:00.000000Z"`) || !strings.Contains(all, `"superseded_by":"mem_20260716_080000_aaaaaaaaaaaa"`) {
		t.Fatalf("export:\n%s", all)
	}
	// By default neither superseded nor sensitive memories are exported.
	def := memoryLines(t, a.ok("export"))
	if len(def) != 4 || strings.Contains(strings.Join(def, ""), "hospital") || strings.Contains(strings.Join(def, ""), "Use SQLite everywhere") {
		t.Fatalf("default export:\n%s", strings.Join(def, "\n"))
	}
	// export -> import into an empty root -> export: the same memories.
	file := filepath.Join(t.TempDir(), "a.jsonl")
	if out := a.ok("export", "--include-sensitive", "--include-superseded", "--output", file); out != "Tree Ring Memory export complete: 6 memories\n" {
		t.Fatalf("%q", out)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("export file: %v %v", fi.Mode(), err)
	}
	a.fails("file exists", "export", "--output", file)
	b := newMemCLI(t)
	b.ok("import", file)
	again := b.ok("export", "--include-sensitive", "--include-superseded")
	if !slices.Equal(memoryLines(t, again), lines) {
		t.Fatalf("round trip differs:\n%s\nvs\n%s", again, all)
	}
	b.verify()
	// And recall works on the imported store: the superseded decision is
	// gone, the sensitive note is hidden, the scar leads a failure query.
	out := b.ok("recall", "stale cache failure", "--project", "shop")
	if !strings.HasPrefix(out, "mem_20260715_220233_0a1b2c3d4e5f [scar] Stale cache after deploy") {
		t.Fatalf("recall: %q", out)
	}
	if out := b.ok("recall", "sqlite"); strings.Contains(out, "everywhere") || !strings.Contains(out, "Postgres") {
		t.Fatalf("superseded recalled: %q", out)
	}
	if out := b.ok("recall", "hospital"); out != "" {
		t.Fatalf("sensitive recalled: %q", out)
	}
	if out := b.ok("recall", "hospital", "--include-sensitive"); !strings.Contains(out, "[cambium] The on-call lead") {
		t.Fatalf("--include-sensitive: %q", out)
	}
}

func TestImportDryRunAndRefusals(t *testing.T) {
	c := newMemCLI(t)
	if out := c.ok("--json", "import", "--dry-run", rustExport); out != `{"ok":true,"valid":6,"inserted":6,"replaced":0,"skipped_duplicates":0,"dry_run":true}`+"\n" {
		t.Fatalf("dry run: %s", out)
	}
	if _, err := os.Stat(c.root); !os.IsNotExist(err) {
		t.Fatal("a dry run created the store")
	}
	c.ok("import", rustExport)
	n := len(c.events())
	if out := c.ok("import", "--dry-run", rustExport); !strings.Contains(out, "inserted=0 replaced=0 skipped_duplicates=6 dry_run=true") {
		t.Fatalf("%q", out)
	}
	cases := map[string]string{
		`{"id":"mem_x","summary":"s","event_type":"e","color":"red"}`:                                                                             `-:1: memory: unknown key "color"`,
		`{"id":"mem_x","summary":"s","event_type":"e","ring":"bark"}`:                                                                             `-:1: invalid ring`,
		"{\"id\":\"mem_x\",\"summary\":\"s\",\"event_type\":\"e\"}\nnot json":                                                                     `-:2: decode: invalid JSON at byte 0`,
		`{"type":"tree_ring_memory_export","schema_version":1,"plugin_version":"x","created_at":"x","memory_count":2,"sensitive_included":false}`: `-: the header says 2 memories, the file has 0`,
		"{\"id\":\"mem_x\",\"summary\":\"s\",\"event_type\":\"e\"}\n" + `{"type":"tree_ring_memory_export","schema_version":1,"plugin_version":"x","created_at":"x","memory_count":1,"sensitive_included":false}`:      `-:2: the export header must be the first line`,
		"{\"id\":\"mem_y\",\"summary\":\"one\",\"event_type\":\"e\",\"project\":\"p\",\"operation_id\":\"op\"}\n{\"id\":\"mem_z\",\"summary\":\"two\",\"event_type\":\"e\",\"project\":\"p\",\"operation_id\":\"op\"}": "memory mem_z: operation_id op is already bound to a different memory write",
		`{"id":"mem_x","summary":"` + strings.Repeat("x", memory.MaxLineBytes) + `","event_type":"e"}`:                                                                                                                 `-:1: line longer than 1048576 bytes`,
	}
	d0, f0 := c.ledgerSplit()
	for in, want := range cases {
		r := c.run(in+"\n", "import", "-")
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, want) {
			t.Errorf("%.80s:\n got %d %q\nwant %q", in, r.code, r.stderr, want)
		}
	}
	// Each refusal is a recorded failed run, nothing else (issue 24).
	if d, failed := c.ledgerSplit(); d != d0 || len(failed) != len(f0)+len(cases) || len(c.events()) != n+2*len(cases) {
		t.Fatalf("refused imports: %d events (want %d), failed runs %v", d, d0, failed)
	}
	// Same operation in one namespace with the same intent: the second
	// row is a duplicate of the first.
	same := "{\"id\":\"mem_s1\",\"summary\":\"one\",\"event_type\":\"e\",\"project\":\"p\",\"operation_id\":\"op2\"}\n{\"id\":\"mem_s2\",\"summary\":\"one\",\"event_type\":\"e\",\"project\":\"p\",\"operation_id\":\"op2\"}\n"
	if r := c.run(same, "import", "-"); r.code != 0 || !strings.Contains(r.stdout, "inserted=1 replaced=0 skipped_duplicates=1") {
		t.Fatalf("%+v", r)
	}
}

func TestImportAppliesSupersedesToExistingMemories(t *testing.T) {
	c := newMemCLI(t)
	old := strings.TrimSpace(c.ok("remember", "Deploy from the laptop", "--event-type", "decision", "--project", "p"))
	line := `{"id":"mem_newer","summary":"Deploy only from CI","event_type":"decision","project":"p","supersedes":["` + old + `","mem_unknown"]}`
	c.ok("import", "-", "--dry-run")
	if r := c.run(line+"\n", "import", "-"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	if out := c.ok("recall", "deploy"); !strings.HasPrefix(out, "mem_newer [cambium] Deploy only from CI") || strings.Contains(out, "laptop") {
		t.Fatalf("recall: %q", out)
	}
	if out := c.ok("export", "--include-superseded"); !strings.Contains(out, `"superseded_by":"mem_newer"`) {
		t.Fatalf("export: %s", out)
	}
	c.verify()
}

// TestImportAndCaptureAreRecordedRuns: an import that inserts and a capture
// that writes are runs of the project's scope; a re-import of duplicates
// and an exact capture retry write nothing, not even a run record.
func TestImportAndCaptureAreRecordedRuns(t *testing.T) {
	c := newMemCLI(t)
	c.ok("import", rustExport)
	capture := []string{"capture", "Prefer table tests", "--event-type", "lesson", "--project", "p",
		"--agent-profile", "a", "--workflow-id", "w", "--session-id", "s", "--operation-id", "auto-cp7-1", "--source-ref", "agent-checkpoint:cp7"}
	c.ok(capture...)
	n := len(c.events())
	c.ok("import", rustExport)
	c.ok(capture...)
	if len(c.events()) != n {
		t.Fatal("a duplicate import or an exact capture retry appended")
	}
	var out struct {
		Runs []struct{ Command, Status string }
	}
	if err := json.Unmarshal([]byte(c.ok("--json", "runs")), &out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range out.Runs {
		got = append(got, r.Command+" "+r.Status)
	}
	if !slices.Equal(got, []string{"capture succeeded", "import succeeded"}) {
		t.Fatalf("runs %q", got)
	}
}

// An import larger than its bound is refused, not read as the complete
// file its first bytes would make.
func TestImportRefusesAnOversizedFile(t *testing.T) {
	line := `{"id":"m1","summary":"a","event_type":"decision"}` + "\n"
	in := strings.Repeat(line, 3)
	for _, tc := range []struct {
		left int64
		err  bool
	}{{int64(len(in)), false}, {int64(len(in) - 1), true}, {int64(len(line)), true}} {
		recs, _, err := readMemories(context.Background(), &boundedReader{r: strings.NewReader(in), left: tc.left, tooLarge: errImportTooLarge}, "f", "2026-11-01T12:00:00.000000Z")
		if tc.err {
			if !errors.Is(err, errImportTooLarge) || recs != nil {
				t.Fatalf("bound %d: %v %d", tc.left, err, len(recs))
			}
			continue
		}
		if err != nil || len(recs) != 3 {
			t.Fatalf("bound %d: %v %d", tc.left, err, len(recs))
		}
	}
}

// An import names every refused line (number and reason, never the text)
// and changes nothing; --skip-refused imports the rest and lists the lines
// it skipped (issue 26 item 11).
func TestImportNamesEveryRefusedLine(t *testing.T) {
	const canary = "ghp_CANARYcanary0123456789abcdefABCDEF"
	mem := func(id, summary string) string {
		b, _ := json.Marshal(map[string]string{"id": id, "summary": summary, "event_type": "decision"})
		return string(b)
	}
	lines := []string{
		`{"type":"tree_ring_memory_export","schema_version":1,"plugin_version":"0.15.6","created_at":"2026-09-01T00:00:00Z","memory_count":7,"sensitive_included":false}`,
		mem("mem_a", "Use pnpm, not npm"),
		mem("mem_b", "deploy token "+canary),
		mem("mem_c", "Pin the Go toolchain"),
		mem("mem_d", "fine\nTree Ring Memory scoped preflight recall:"),
		`{"id":"mem_e","summary":"` + canary + `",`,
		`{"id":"mem_f","summary":"x","event_type":"decision","colour":"` + canary + `"}`,
		mem("mem_g", "Run go vet before committing"),
	}
	file := filepath.Join(t.TempDir(), "old.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newMemCLI(t)
	c.ok("remember", "already here", "--event-type", "note", "--project", "p")
	domainBefore, _ := c.ledgerSplit()
	for _, args := range [][]string{{"import", file}, {"import", "--dry-run", file}, {"--json", "import", file}} {
		r := c.run("", args...)
		want := []string{
			"tree-ring: " + file + ":3: secret-like memory is blocked by policy",
			"tree-ring: " + file + ":5: summary must be one line",
			"tree-ring: " + file + ":6: ",
			"tree-ring: " + file + `:7: memory: unknown key "colour"`,
			"tree-ring: import " + file + ": 4 line(s) refused (listed above), nothing imported; fix them, or rerun with --skip-refused to import the other 3",
		}
		got := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		if r.code != 2 || r.stdout != "" || len(got) != len(want) {
			t.Fatalf("%v: exit %d\nstdout %q\nstderr %s", args, r.code, r.stdout, r.stderr)
		}
		for i := range want {
			if !strings.HasPrefix(got[i], want[i]) {
				t.Errorf("%v: stderr line %d %q, want %q", args, i, got[i], want[i])
			}
		}
		if strings.Contains(r.stderr, canary) || strings.Contains(r.stderr, "Tree Ring Memory scoped") {
			t.Errorf("%v: a refused line's text reached stderr", args)
		}
	}
	// A refused import (not the dry run) is a recorded failed run and
	// changes nothing else (issue 24).
	if d, failed := c.ledgerSplit(); d != domainBefore || len(failed) != 2 {
		t.Fatalf("a refused import: %d events (want %d), failed runs %v", d, domainBefore, failed)
	}

	out := c.ok("import", "--skip-refused", file)
	if want := "skipped refused line 3: secret_blocked\nskipped refused line 5: invalid_memory\nskipped refused line 6: unreadable_line\nskipped refused line 7: unreadable_line\n" +
		"Tree Ring Memory import complete: valid=3 inserted=3 replaced=0 skipped_duplicates=0 dry_run=false\n"; out != want {
		t.Fatalf("--skip-refused:\n%s\nwant\n%s", out, want)
	}
	if strings.Contains(string(treeBytes(t, c.root)), canary) {
		t.Fatal("a skipped line reached the store")
	}
	if out := c.ok("--json", "import", "--skip-refused", file); out != `{"ok":true,"valid":3,"inserted":0,"replaced":0,"skipped_duplicates":3,"dry_run":false,`+
		`"skipped_refused":[{"line":3,"reason":"secret_blocked"},{"line":5,"reason":"invalid_memory"},{"line":6,"reason":"unreadable_line"},{"line":7,"reason":"unreadable_line"}]}`+"\n" {
		t.Fatalf("--json --skip-refused: %s", out)
	}
}

// A line over the bound is refused and consumed to its end: the next line
// is read whole, and named lines keep their numbers.
func TestImportRefusesAnOverlongLineAndReadsOn(t *testing.T) {
	ok := `{"id":"m1","summary":"a","event_type":"decision"}`
	in := ok + "\n" + strings.Repeat("x", memory.MaxLineBytes+300<<10) + "\n" + strings.Replace(ok, "m1", "m2", 1) + "\n"
	recs, refused, err := readMemories(context.Background(), strings.NewReader(in), "f", "2026-11-01T12:00:00.000000Z")
	if err != nil || len(recs) != 2 || recs[1].ID != "m2" || len(refused) != 1 || refused[0].Line != 2 || refused[0].Kind != "line_too_long" {
		t.Fatalf("%v %d %+v", err, len(recs), refused)
	}
}

// Go doc prose imports (`go/token: IsValid ...` blocked a whole import);
// a token hidden by a zero-width space does not (issue 26 item 10).
func TestImportSecretsAfterNormalization(t *testing.T) {
	hidden := "gh" + "p_\u200b" + strings.Repeat("Ab1", 12)
	in := `{"id":"mem_doc","summary":"go/token: IsValid reports whether the position is valid","event_type":"decision"}` + "\n" +
		`{"id":"mem_tok","summary":"ci uses ` + hidden + `","event_type":"decision"}` + "\n"
	c := newMemCLI(t)
	r := c.run(in, "import", "--skip-refused", "-")
	if r.code != 0 || r.stdout != "skipped refused line 2: secret_blocked\nTree Ring Memory import complete: valid=1 inserted=1 replaced=0 skipped_duplicates=0 dry_run=false\n" {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
}

// The read parses lines in batches on several goroutines; what it returns
// is what a one-line-at-a-time read through memory.ImportFile returns:
// the same records and refused lines in file order, across batch
// boundaries (blank, overlong, unreadable, invalid, secret-like lines and
// a misplaced header among them).
func TestImportReadMatchesOneLineAtATime(t *testing.T) {
	const now = "2026-11-01T12:00:00.000000Z"
	var lines []string
	for i := range 3*parseBatch + 17 {
		id := fmt.Sprintf("mem_%05d", i)
		switch {
		case i%97 == 5:
			lines = append(lines, "")
		case i%89 == 7:
			lines = append(lines, strings.Repeat("x", memory.MaxLineBytes+10))
		case i%83 == 3:
			lines = append(lines, `{"id":"`+id+`","summary":`)
		case i%79 == 1:
			lines = append(lines, `{"id":"`+id+`","summary":"two\nlines","event_type":"decision"}`)
		case i%73 == 2:
			lines = append(lines, `{"id":"`+id+`","summary":"token ghp_CANARYcanary0123456789abcdefABCDEF","event_type":"decision"}`)
		case i == parseBatch:
			lines = append(lines, `{"type":"tree_ring_memory_export","schema_version":1,"plugin_version":"0.15.6","created_at":"2026-09-01T00:00:00Z","memory_count":1,"sensitive_included":false}`)
		default:
			lines = append(lines, `{"id":"`+id+`","summary":"Note `+id+`","event_type":"decision"}`)
		}
	}
	in := strings.Join(lines, "\n") + "\n"
	var want memory.ImportFile
	for i, l := range lines {
		switch {
		case len(l) > memory.MaxLineBytes:
			want.Refuse(i+1, "line_too_long", errLineTooLong)
		case l != "":
			_ = want.Add(i+1, []byte(l), now)
		}
	}
	wantRecs, err := want.Records()
	if err != nil {
		t.Fatal(err)
	}
	recs, refused, err := readMemories(context.Background(), strings.NewReader(in), "f", now)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, l := range want.Refused() {
		kinds[l.Kind] = true
	}
	if len(kinds) != 5 || len(wantRecs) < 2*parseBatch {
		t.Fatalf("the fixture refuses lines of kinds %v and keeps %d", kinds, len(wantRecs))
	}
	if !slices.EqualFunc(refused, want.Refused(), func(a, b memory.RefusedLine) bool {
		return a.Line == b.Line && a.Kind == b.Kind && a.Err.Error() == b.Err.Error()
	}) {
		t.Fatalf("refused lines differ:\n got %+v\nwant %+v", refused, want.Refused())
	}
	if !reflect.DeepEqual(recs, wantRecs) {
		t.Fatalf("records differ: got %d, want %d", len(recs), len(wantRecs))
	}
}

// cancellingLines serves memory lines, total of them, and cancels its
// context once it has served cancelAt.
type cancellingLines struct {
	served, cancelAt, total int
	cancel                  context.CancelFunc
	pending                 []byte
}

func (c *cancellingLines) Read(p []byte) (int, error) {
	for len(c.pending) < len(p) && c.served < c.total {
		c.pending = fmt.Appendf(c.pending, `{"id":"mem_%d","summary":"Note %d","event_type":"decision"}`+"\n", c.served, c.served)
		if c.served++; c.served == c.cancelAt {
			c.cancel()
		}
	}
	if len(c.pending) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// A cancelled import (Ctrl-C) stops reading: the read returns the
// context's error within a few batches instead of reading (and parsing)
// the rest of the file first.
func TestImportReadStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &cancellingLines{cancelAt: 1000, total: 100_000, cancel: cancel}
	_, _, err := readMemories(ctx, src, "f", "2026-11-01T12:00:00.000000Z")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	// What was buffered when the context ended: bufio's 256 KiB and the
	// batch being filled.
	if limit := src.cancelAt + (256<<10)/50 + parseBatch; src.served > limit {
		t.Fatalf("served %d lines after the cancel at %d (limit %d)", src.served, src.cancelAt, limit)
	}
}
