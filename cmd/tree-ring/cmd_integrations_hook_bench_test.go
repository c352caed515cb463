package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/fsm"
	"github.com/tree-ring/tree-ring/projections"
)

// Whole-process benchmarks of the lifecycle hook; docs/benchmarks.md
// ("SessionStart hook, whole process") explains the method and records the figures.
//
//	go test ./cmd/tree-ring -run '^$' -bench HookSessionStart -benchtime 400x
//
// TREE_RING_BENCH_MEMORIES, TREE_RING_BENCH_RECEIPTS (default 10000 each)
// size the ledger; TREE_RING_BENCH_CGO=1 builds with the toolchain's
// default cgo setting instead of a static release build;
// TREE_RING_BENCH_CALLGRIND=DIR keeps the callgrind profiles there (and
// the symbols in the binaries); TREE_RING_BENCH_KEEP=DIR builds the
// binaries and the projects in fresh directories under DIR and keeps them
// (their paths are logged), so that the hook and the floor program can be
// rerun by hand on the same ledger (strace, perf, /usr/bin/time).

// benchBuild is how both binaries are built: a release build (static,
// no symbol tables). TREE_RING_BENCH_CGO=1 keeps the toolchain's default
// (a cgo-linked binary when a C compiler is present) for comparison.
func benchBuild(out string) *exec.Cmd {
	ldflags := "-ldflags=-s -w"
	if os.Getenv("TREE_RING_BENCH_CALLGRIND") != "" {
		ldflags = "-ldflags=" // keep the symbols for callgrind_annotate
	}
	cmd := exec.Command("go", "build", "-trimpath", ldflags, "-o", out, ".")
	cmd.Env = os.Environ()
	if os.Getenv("TREE_RING_BENCH_CGO") != "1" {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
	}
	return cmd
}

// benchBinaries builds tree-ring, the floor program (testdata/floor) and
// an empty Go program (func main(){}) with the same toolchain and flags,
// into the benchmark's temporary directory (the build cache makes a
// rebuild cheap).
func benchBinaries(b *testing.B) (bin, empty, floor string) {
	b.Helper()
	dir := benchTempDir(b)
	bin, empty, floor = filepath.Join(dir, "tree-ring"), filepath.Join(dir, "empty"), filepath.Join(dir, "floor")
	if out, err := benchBuild(bin).CombinedOutput(); err != nil {
		b.Fatalf("go build: %v %s", err, out)
	}
	fl := benchBuild(floor)
	fl.Dir = filepath.Join("testdata", "floor")
	if out, err := fl.CombinedOutput(); err != nil {
		b.Fatalf("go build floor: %v %s", err, out)
	}
	src := filepath.Join(dir, "empty-src")
	os.Mkdir(src, 0o755)
	os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module empty\n\ngo 1.26\n"), 0o644)
	cmd := benchBuild(empty)
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build empty: %v %s", err, out)
	}
	return bin, empty, floor
}

// benchTempDir is b.TempDir(), or a new directory under
// TREE_RING_BENCH_KEEP that outlives the benchmark.
func benchTempDir(b *testing.B) string {
	b.Helper()
	keep := os.Getenv("TREE_RING_BENCH_KEEP")
	if keep == "" {
		return b.TempDir()
	}
	dir, err := os.MkdirTemp(keep, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

func benchRun(b *testing.B, dir, stdin, name string, args ...string) []byte {
	b.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s %v: %v %s", name, args, err, errb.String())
	}
	return out.Bytes()
}

// benchProjectDir creates "<tmp>/<name>/src/deep" as a git repository with
// a .codex marker and returns the project root.
func benchProjectDir(b *testing.B, name string) string {
	b.Helper()
	base, err := filepath.EvalSymlinks(benchTempDir(b))
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(base, name)
	os.MkdirAll(filepath.Join(dir, "src", "deep"), 0o755)
	os.MkdirAll(filepath.Join(dir, ".codex"), 0o755)
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		b.Fatalf("git init: %v %s", err, out)
	}
	return dir
}

// seedMemories imports n memories of the project through `tree-ring
// import` (the published JSONL): mostly project-scoped notes, every 50th a
// scar warning, every 10th agent-scoped to codex.
func seedMemories(b *testing.B, bin, dir string, n int) {
	b.Helper()
	f := filepath.Join(dir, "memories.jsonl")
	os.WriteFile(f, memoriesJSONL(dir, n, time.Now().UTC().Add(-48*time.Hour)), 0o600)
	benchRun(b, dir, "", bin, "import", f)
	os.Remove(f)
}

// memoriesJSONL is seedMemories' published JSONL, the memories created a
// second apart from now on.
func memoriesJSONL(dir string, n int, now time.Time) []byte {
	_, alias := preflight.ProjectName(dir)
	var buf bytes.Buffer
	for i := 0; i < n; i++ {
		m := map[string]any{
			"id":         fmt.Sprintf("mem_%s_%012x", now.Format("20060102_150405"), i),
			"created_at": now.Add(time.Duration(i) * time.Second).Format("2006-01-02T15:04:05.000000Z"),
			"project":    alias, "scope": "project", "ring": "cambium", "event_type": "lesson",
			"summary": fmt.Sprintf("Implementation note %d for subsystem %d.", i, i%17),
			"source":  map[string]any{"type": "agent", "ref": fmt.Sprintf("bench:%d", i)},
			"tags":    []string{"bench"}, "salience": 0.5 + float64(i%50)/100, "confidence": 0.7, "sensitivity": "normal", "retention": "durable",
		}
		m["updated_at"] = m["created_at"]
		if i%50 == 0 {
			m["ring"], m["event_type"], m["summary"] = "scar", "warning", fmt.Sprintf("Avoid stale deployment rollback cache failure %d.", i)
		}
		if i%10 == 1 {
			m["scope"], m["agent_profile"] = "agent", "codex"
		}
		line, _ := json.Marshal(map[string]any{"type": "memory_event", "memory": m})
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// seedReceipts records n receipts (100 workers of 100 codex subagents, the
// retention limit, all fresh) exactly as a preflight does: the receipt
// file, preflight.succeeded and receipt.recorded, through the ledger's
// append path with projs folded (every projection; none for a build of
// another projection layout, which then refolds them: BenchmarkABHook).
func seedReceipts(b testing.TB, dir string, n int, projs []projections.Projection) {
	b.Helper()
	start := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	seedReceiptsAt(b, dir, n, start, func() ulid.ULID { return ulid.MustNew(ulid.Timestamp(start), ulid.DefaultEntropy()) }, projs)
}

// seedReceiptsAt is seedReceipts with the receipts recorded from start on,
// their events' ids from newID.
func seedReceiptsAt(b testing.TB, dir string, n int, start time.Time, newID func() ulid.ULID, projs []projections.Projection) {
	b.Helper()
	st, err := bolt.OpenRoot(filepath.Join(dir, ".tree-ring"), bolt.Options{Projections: projs})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	m, err := adapters.DecodeManifest(mustRead(b, filepath.Join(dir, adapters.ManifestPath)))
	if err != nil {
		b.Fatal(err)
	}
	rec := m.Harnesses["codex"]
	f := &events.Factory{Actor: "codex", NewID: newID}
	state := fsm.ConfiguredAwaitingProof
	const perTx = 500
	for i := 0; i < n; i += perTx {
		err := st.Update(context.Background(), func(tx *bolt.Tx) error {
			var evs []events.Envelope
			for j := i; j < min(i+perTx, n); j++ {
				at := start.Add(time.Duration(j/100) * time.Second)
				f.Now = func() time.Time { return at }
				agent := fmt.Sprintf("codex:bench:%016x", j%100)
				id := fmt.Sprintf("receipt-%08x-0000-4000-8000-%012x", j, j)
				rc := receipt.Receipt{SchemaVersion: 1, ProtocolVersion: 1, ReceiptID: id, HarnessID: "codex", AdapterVersion: rec.AdapterVersion,
					BridgeFingerprint: rec.BridgeFingerprint, StoreID: m.StoreID, ProjectRootFingerprint: m.ProjectRootFingerprint,
					WorkerKeyFingerprint: preflight.WorkerKeyFingerprint("codex", agent),
					Session:              preflight.Identity{AgentProfile: agent, WorkflowID: "wf", SessionID: fmt.Sprintf("agent-%d", j%100)},
					State:                string(fsm.Active), QueryClass: "startup_fallback", SelectedMemoryIDsSHA256: strings.Repeat("0", 64),
					DurationMS: 3, Status: "success", RecordedAt: receipt.FormatTime(at)}
				body := rc.Encode()
				path := filepath.Join(dir, rc.Path())
				os.MkdirAll(filepath.Dir(path), 0o700)
				if err := os.WriteFile(path, body, 0o600); err != nil {
					return err
				}
				sum := sha256.Sum256(body)
				s, err := f.New(events.HarnessStream("codex"), events.TypePreflightSucceeded, &events.PreflightSucceeded{
					Transition: events.Transition{From: string(state), To: string(fsm.Active)}, HarnessID: "codex", WorkerKeyFingerprint: rc.WorkerKeyFingerprint,
					ReceiptID: id, QueryClass: rc.QueryClass, SelectedMemoryIDsSHA256: rc.SelectedMemoryIDsSHA256, DurationMS: 3})
				if err != nil {
					return err
				}
				state = fsm.Active
				session := events.ReceiptSession(rc.Session)
				r, err := f.New(events.HarnessStream("codex"), events.TypeReceiptRecorded, &events.ReceiptRecorded{
					HarnessID: "codex", ReceiptID: id, ProtocolVersion: 1, AdapterVersion: rc.AdapterVersion, BridgeFingerprint: rc.BridgeFingerprint,
					StoreID: rc.StoreID, ProjectRootFingerprint: rc.ProjectRootFingerprint, WorkerKeyFingerprint: rc.WorkerKeyFingerprint, State: rc.State,
					QueryClass: rc.QueryClass, SelectedMemoryIDsSHA256: rc.SelectedMemoryIDsSHA256, DurationMS: 3, Status: "success",
					SHA256: hex.EncodeToString(sum[:]), RecordedAt: rc.RecordedAt, Session: &session, Path: rc.Path()})
				if err != nil {
					return err
				}
				evs = append(evs, s, r)
			}
			_, err := tx.Append(events.HarnessStream("codex"), int64(tx.StreamVersion(events.HarnessStream("codex"))), evs...)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func benchCount(env string) int {
	if v := os.Getenv(env); v != "" {
		n, err := strconv.Atoi(v)
		if err == nil {
			return n
		}
	}
	return 10_000
}

func mustRead(b testing.TB, path string) []byte {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkHookSessionStart times, side by side in one run, the codex
// SessionStart hook through its installed command line (sh -c, from a
// nested directory, PATH=/usr/bin:/bin) on a ledger holding 10,000
// memories and 10,000 receipts, against two programs installed at
// .tree-ring/bin/tree-ring of identical projects and started by the same
// command line: the floor program (testdata/floor: what any durable
// implementation must do) and an empty Go program. The same three are also
// executed directly (no shell, no git), and `tree-ring version` against the
// empty program (start-up). Each iteration runs every series, rotating the
// order. Reported: medians and p99s in ms and the ratios of medians; a Stop
// re-run (start-up plus the contract on disk); then 32 hooks started at
// once against 32 floor programs at once (wall until the last exits), the
// durable syncs of one hook (strace) and its ledger commits.
func BenchmarkHookSessionStart(b *testing.B) {
	bin, empty, floor := benchBinaries(b)
	dir := benchProjectDir(b, "bench project")
	benchRun(b, dir, "", bin, "init")
	// TREE_RING_BENCH_MEMORIES and TREE_RING_BENCH_RECEIPTS change the
	// ledger's size (default 10,000 each).
	if n := benchCount("TREE_RING_BENCH_MEMORIES"); n > 0 {
		seedMemories(b, bin, dir, n)
	}
	if n := benchCount("TREE_RING_BENCH_RECEIPTS"); n > 0 {
		seedReceipts(b, dir, n, projections.All())
	}
	install := func(prog string) string {
		p := benchProjectDir(b, "bench project")
		os.MkdirAll(filepath.Join(p, ".tree-ring", "bin"), 0o700)
		if err := os.WriteFile(filepath.Join(p, ".tree-ring", "bin", "tree-ring"), mustRead(b, prog), 0o755); err != nil {
			b.Fatal(err)
		}
		return p
	}
	other, floorDir := install(empty), install(floor)
	if os.Getenv("TREE_RING_BENCH_KEEP") != "" {
		b.Logf("kept: binaries in %s; hook project %q, floor program's %q, empty program's %q", filepath.Dir(bin), dir, floorDir, other)
	}
	var hooks struct {
		Hooks map[string][]struct {
			Hooks []struct{ Command string } `json:"hooks"`
		} `json:"hooks"`
	}
	json.Unmarshal(mustRead(b, filepath.Join(dir, ".codex", "hooks.json")), &hooks)
	line := hooks.Hooks["SessionStart"][0].Hooks[0].Command
	payload := func(root string, i int) string {
		return fmt.Sprintf(`{"session_id":"bench-%d","transcript_path":"/t.jsonl","cwd":%q,"hook_event_name":"SessionStart","model":"gpt-5.5","permission_mode":"default","source":"startup"}`,
			i, filepath.Join(root, "src", "deep"))
	}
	for _, root := range []string{dir, floorDir} {
		if out := benchRun(b, filepath.Join(root, "src", "deep"), payload(root, -1), "/bin/sh", "-c", line); !bytes.HasPrefix(out, []byte(`{"hookSpecificOutput":`)) {
			b.Fatalf("hook output %s", out)
		}
	}
	// The Stop re-run (stop_hook_active: true) through the Stop command
	// line: process start, stdin, the activation contract on disk, "{}";
	// no ledger, no recall, no fsync.
	stopLine := hooks.Hooks["Stop"][0].Hooks[0].Command
	stopPayload := func(i int) string {
		return fmt.Sprintf(`{"session_id":"bench-%d","cwd":%q,"hook_event_name":"Stop","stop_hook_active":true,"last_assistant_message":"done"}`, i, filepath.Join(dir, "src", "deep"))
	}
	// The arguments the command line ends with, for the direct series.
	args := func(root string) []string {
		return []string{"--root", filepath.Join(root, ".tree-ring"), "integrations", "hook", "--harness", "codex", "--input-json-stdin"}
	}
	type series struct {
		name string
		run  func(i int) time.Duration
		d    []time.Duration
	}
	timed := func(cwd, stdin, name string, argv ...string) time.Duration {
		t0 := time.Now()
		benchRun(b, cwd, stdin, name, argv...)
		return time.Since(t0)
	}
	deep := func(root string) string { return filepath.Join(root, "src", "deep") }
	all := []*series{
		{name: "hook", run: func(i int) time.Duration { return timed(deep(dir), payload(dir, i), "/bin/sh", "-c", line) }},
		{name: "floor", run: func(i int) time.Duration { return timed(deep(floorDir), payload(floorDir, i), "/bin/sh", "-c", line) }},
		{name: "empty", run: func(i int) time.Duration { return timed(deep(other), payload(other, i), "/bin/sh", "-c", line) }},
		{name: "stop", run: func(i int) time.Duration { return timed(deep(dir), stopPayload(i), "/bin/sh", "-c", stopLine) }},
		{name: "hook-direct", run: func(i int) time.Duration {
			return timed(deep(dir), payload(dir, 3_000_000+i), filepath.Join(dir, ".tree-ring", "bin", "tree-ring"), args(dir)...)
		}},
		{name: "floor-direct", run: func(i int) time.Duration {
			return timed(deep(floorDir), payload(floorDir, 3_000_000+i), filepath.Join(floorDir, ".tree-ring", "bin", "tree-ring"), args(floorDir)...)
		}},
		{name: "empty-direct", run: func(i int) time.Duration { return timed(deep(other), "", empty) }},
		{name: "version-direct", run: func(i int) time.Duration { return timed(deep(dir), "", bin, "version") }},
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for k := range all { // rotate the order so that no series always runs first
			s := all[(i+k)%len(all)]
			s.d = append(s.d, s.run(i))
		}
	}
	b.StopTimer()
	med := map[string]time.Duration{}
	for _, s := range all {
		med[s.name] = quantile(s.d, 0.5)
		b.ReportMetric(ms(med[s.name]), s.name+"-median-ms")
		if s.name == "hook" || s.name == "floor" || s.name == "empty" {
			b.ReportMetric(ms(quantile(s.d, 0.99)), s.name+"-p99-ms")
		}
	}
	ratio := func(a, c string) float64 { return float64(med[a]) / float64(med[c]) }
	b.ReportMetric(ratio("hook", "floor"), "hook/floor")
	b.ReportMetric(ratio("hook-direct", "floor-direct"), "direct-hook/floor")
	b.ReportMetric(ratio("hook", "empty"), "hook/empty")
	b.ReportMetric(ratio("version-direct", "empty-direct"), "version/empty")

	// The ledger pages one hook's commit writes (bolt.Pages around it).
	pages := func() bolt.Pages {
		st, err := bolt.OpenRoot(filepath.Join(dir, ".tree-ring"), bolt.Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		p, err := st.Pages()
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	before := pages()
	benchRun(b, deep(dir), payload(dir, 5_000_000), "/bin/sh", "-c", line)
	written := before.Written(pages())
	b.Logf("ledger pages one hook commit wrote: %s", formatPages(written))
	total := 0
	for _, n := range written {
		total += n
	}
	b.ReportMetric(float64(total), "hook-pages")

	// 32 at once, the hook and then the floor program.
	burst := func(root string, base int) time.Duration {
		var wg sync.WaitGroup
		errs := make([]error, 32)
		t0 := time.Now()
		for i := 0; i < 32; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				cmd := exec.Command("/bin/sh", "-c", line)
				cmd.Dir = deep(root)
				cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + root}
				cmd.Stdin = strings.NewReader(payload(root, base+i))
				if out, err := cmd.CombinedOutput(); err != nil {
					errs[i] = fmt.Errorf("%v: %s", err, out)
				}
			}(i)
		}
		wg.Wait()
		d := time.Since(t0)
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		return d
	}
	hb, fb := burst(dir, 1_000_000), burst(floorDir, 1_000_000)
	b.ReportMetric(ms(hb), "burst32-ms")
	b.ReportMetric(ms(fb), "floor-burst32-ms")
	b.ReportMetric(float64(hb)/float64(fb), "burst/floor")
	benchRun(b, dir, "", bin, "audit", "verify")

	// The durable syncs of one hook process and of one floor program
	// (strace, when installed).
	if syncs, ok := benchSyncs(b, dir, line, payload(dir, 2_000_000)); ok {
		b.ReportMetric(float64(syncs), "hook-syncs")
	}
	if syncs, ok := benchSyncs(b, floorDir, line, payload(floorDir, 2_000_000)); ok {
		b.ReportMetric(float64(syncs), "floor-syncs")
	}

	// Instructions of one process of each, executed directly, under
	// valgrind --tool=callgrind (when installed), median of three runs.
	// TREE_RING_BENCH_CALLGRIND names a directory to keep the profiles in
	// (callgrind_annotate; the last run's).
	keep := os.Getenv("TREE_RING_BENCH_CALLGRIND")
	instr := map[string]float64{}
	for _, c := range []struct {
		name, cwd, stdin, prog string
		argv                   []string
	}{
		{"hook", deep(dir), payload(dir, 4_000_000), filepath.Join(dir, ".tree-ring", "bin", "tree-ring"), args(dir)},
		{"floor", deep(floorDir), payload(floorDir, 4_000_000), filepath.Join(floorDir, ".tree-ring", "bin", "tree-ring"), args(floorDir)},
		{"version", deep(dir), "", bin, []string{"version"}},
		{"empty", deep(other), "", empty, nil},
	} {
		// The median of three runs: the runtime's scheduler and heap
		// growth vary a process's count by up to ±0.1 M from run to run.
		var runs []float64
		for range 3 {
			n, ok := benchInstructions(b, c.cwd, c.stdin, keep, c.name, c.prog, c.argv...)
			if !ok {
				return
			}
			runs = append(runs, n)
		}
		slices.Sort(runs)
		n := runs[1]
		instr[c.name] = n
		b.ReportMetric(n/1e6, c.name+"-Minstr")
	}
	b.ReportMetric(instr["hook"]/instr["floor"], "instr-hook/floor")
	b.ReportMetric(instr["version"]/instr["empty"], "instr-version/empty")
}

// benchInstructions runs prog once under callgrind and returns the
// instructions it executed (callgrind's "Collected" total); ok is false
// when valgrind is not installed. The profile is kept in keep (if set) as
// callgrind.<name>.
func benchInstructions(b *testing.B, cwd, stdin, keep, name, prog string, argv ...string) (float64, bool) {
	b.Helper()
	vg, err := exec.LookPath("valgrind")
	if err != nil {
		return 0, false
	}
	out := filepath.Join(b.TempDir(), "callgrind."+name)
	if keep != "" {
		out = filepath.Join(keep, "callgrind."+name)
	}
	cmd := exec.Command(vg, append([]string{"--tool=callgrind", "--callgrind-out-file=" + out, prog}, argv...)...)
	// Async preemption signals (SIGURG) crash callgrind 3.19's signal
	// bookkeeping; turning them off changes no instruction of the work.
	cmd.Dir, cmd.Env, cmd.Stdin = cwd, []string{"PATH=/usr/bin:/bin", "HOME=" + cwd, "GODEBUG=asyncpreemptoff=1"}, strings.NewReader(stdin)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	if err := cmd.Run(); err != nil {
		b.Fatalf("callgrind %s: %v %s", name, err, errb.String())
	}
	for l := range strings.Lines(errb.String()) {
		if _, v, ok := strings.Cut(l, "Collected : "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				b.Fatalf("callgrind %s: %q", name, l)
			}
			return n, true
		}
	}
	b.Fatalf("callgrind %s: no total in %s", name, errb.String())
	return 0, false
}

// benchSyncs runs the hook once under strace and counts its fdatasync and
// fsync calls; ok is false when strace is not installed.
func benchSyncs(b *testing.B, dir, line, stdin string) (int, bool) {
	b.Helper()
	strace, err := exec.LookPath("strace")
	if err != nil {
		return 0, false
	}
	trace := filepath.Join(b.TempDir(), "trace")
	benchRun(b, filepath.Join(dir, "src", "deep"), stdin, strace, "-f", "-qq", "-e", "trace=fdatasync,fsync", "-o", trace, "/bin/sh", "-c", line)
	n := 0
	for l := range strings.Lines(string(mustRead(b, trace))) {
		if strings.Contains(l, "sync(") && !strings.Contains(l, "resumed") {
			n++
		}
	}
	return n, true
}
