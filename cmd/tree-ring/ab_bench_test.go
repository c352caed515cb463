//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/events/memory"
)

// A/B benchmarks of whole builds: tree-ring built from several source
// trees (git states), each binary on an identical project, all timed in
// the same run, interleaved. docs/bench-ab.sh exports the git states and
// runs these; docs/replacements.md records the decisions they back.
//
//	TREE_RING_BENCH_AB="base=/tmp/a new=/tmp/b" go test ./cmd/tree-ring -run '^$' -bench 'AB' -benchtime 200x
//
// TREE_RING_BENCH_AB is a space-separated list of label=dir, dir a module
// root; the first is the baseline every ratio divides by.

type abBuild struct {
	label, bin string
}

func abBuilds(b *testing.B) []abBuild {
	b.Helper()
	spec := strings.Fields(os.Getenv("TREE_RING_BENCH_AB"))
	if len(spec) < 2 {
		b.Skip("TREE_RING_BENCH_AB names no two source trees (docs/bench-ab.sh)")
	}
	dir := benchTempDir(b)
	var out []abBuild
	for _, s := range spec {
		label, src, ok := strings.Cut(s, "=")
		if !ok {
			b.Fatalf("TREE_RING_BENCH_AB: %q is not label=dir", s)
		}
		bin := filepath.Join(dir, label, "tree-ring")
		cmd := benchBuild(bin)
		cmd.Dir = filepath.Join(src, "cmd", "tree-ring")
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v %s", label, err, o)
		}
		out = append(out, abBuild{label, bin})
	}
	return out
}

// abSummaries are the memories' summaries, in turn: prose, five of eight
// holding the detector's triggers beside the character their rule
// requires ("=", ":"), so that the guard's patterns run on them (and
// match nothing), as on a coding agent's notes. abPlain are the summaries
// of BenchmarkHookSessionStart, which reach no pattern.
var abSummaries = []string{
	"Implementation note %d for subsystem %d.",
	"Set LOG_LEVEL=debug before the token refresh test %d of suite %d.",
	"Auth sends a Bearer header from the session cache, see note %d/%d.",
	"The deploy key lives in the vault: rotate it every quarter (%d, %d).",
	"Run the api tests with make check; results at https://ci.example/%d/%d.",
	"Token budget: keep prompts under 8k for job %d of %d.",
	"Prefer table tests with a fixed clock, case %d of %d.",
	"Avoid stale deployment rollback cache failure %d in %d.",
}

var abPlain = []string{abSummaries[0], abSummaries[7]}

// writeABMemories writes n memories of the project as `tree-ring import`
// reads them (the published JSONL), the same bytes for every build.
func writeABMemories(b *testing.B, path, project string, n int, summaries []string) {
	b.Helper()
	var buf bytes.Buffer
	now := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Second)
	for i := 0; i < n; i++ {
		summary := fmt.Sprintf(summaries[i%len(summaries)], i, i%17)
		if memory.InspectText(summary) != memory.SensitivityNormal {
			b.Fatalf("bench summary %q is not normal", summary)
		}
		m := map[string]any{
			"id":         fmt.Sprintf("mem_%s_%012x", now.Format("20060102_150405"), i),
			"created_at": now.Add(time.Duration(i) * time.Second).Format("2006-01-02T15:04:05.000000Z"),
			"project":    project, "scope": "project", "ring": "cambium", "event_type": "lesson", "summary": summary,
			"source": map[string]any{"type": "agent", "ref": fmt.Sprintf("bench:%d", i)},
			"tags":   []string{"bench"}, "salience": 0.5 + float64(i%50)/100, "confidence": 0.7, "sensitivity": "normal", "retention": "durable",
		}
		m["updated_at"] = m["created_at"]
		if i%50 == 0 {
			m["ring"], m["event_type"] = "scar", "warning"
		}
		line, _ := json.Marshal(map[string]any{"type": "memory_event", "memory": m})
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
}

// abTimed runs one process and returns its wall time (fork to wait) and
// its CPU (user + system, from wait4).
func abTimed(b *testing.B, dir, stdin, name string, args ...string) (wall, cpu time.Duration) {
	b.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	cmd.Stdin = strings.NewReader(stdin)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s %v: %v %s", name, args, err, errb.String())
	}
	wall = time.Since(t0)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return wall, cpu
}

// abSeries is one measured quantity of every build, in build order.
type abSeries struct {
	name string
	d    [][]time.Duration
}

// report gives each build's median in ms and its ratio to the first's.
func (s *abSeries) report(b *testing.B, builds []abBuild) {
	base := quantile(s.d[0], 0.5)
	for k, bd := range builds {
		m := quantile(s.d[k], 0.5)
		b.ReportMetric(ms(m), s.name+"-"+bd.label+"-ms")
		if k > 0 {
			b.ReportMetric(float64(m)/float64(base), s.name+"-"+bd.label+"/"+builds[0].label)
		}
	}
}

func loadAverage() string {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}

// BenchmarkABHook times the codex SessionStart hook through its installed
// command line (sh -c from a nested directory, as in
// BenchmarkHookSessionStart) and `tree-ring version` (start-up), for every
// build on its own projects: initialised by that build, the same 10,000
// memories (imported by it) and 10,000 receipts; "hook" on abSummaries,
// "hook-plain" on abPlain. Each iteration runs every build once, rotating
// the order. Reported per build: median wall and CPU (wait4) in ms, each
// median's ratio to the first build's, then the instructions of one hook
// and one version (abInstructions).
func BenchmarkABHook(b *testing.B) {
	builds := abBuilds(b)
	type project struct{ dir, line string }
	var projects, plain []project
	setup := func(bd abBuild, summaries []string) project {
		dir := benchProjectDir(b, "bench project")
		benchRun(b, dir, "", bd.bin, "init")
		_, alias := preflight.ProjectName(dir)
		f := filepath.Join(dir, "memories.jsonl")
		writeABMemories(b, f, alias, benchCount("TREE_RING_BENCH_MEMORIES"), summaries)
		benchRun(b, dir, "", bd.bin, "import", f)
		os.Remove(f)
		// Seeded unfolded and refolded by the build: builds of different
		// projection layouts compare on the same events.
		seedReceipts(b, dir, benchCount("TREE_RING_BENCH_RECEIPTS"), nil)
		benchRun(b, dir, "", bd.bin, "projections", "rebuild")
		var hooks struct {
			Hooks map[string][]struct {
				Hooks []struct{ Command string } `json:"hooks"`
			} `json:"hooks"`
		}
		if err := json.Unmarshal(mustRead(b, filepath.Join(dir, ".codex", "hooks.json")), &hooks); err != nil {
			b.Fatal(err)
		}
		return project{dir, hooks.Hooks["SessionStart"][0].Hooks[0].Command}
	}
	for _, bd := range builds {
		projects = append(projects, setup(bd, abSummaries))
		plain = append(plain, setup(bd, abPlain))
	}
	payload := func(root string, i int) string {
		return fmt.Sprintf(`{"session_id":"ab-%d","transcript_path":"/t.jsonl","cwd":%q,"hook_event_name":"SessionStart","model":"gpt-5.5","permission_mode":"default","source":"startup"}`,
			i, filepath.Join(root, "src", "deep"))
	}
	for _, p := range append(slices.Clone(projects), plain...) { // the first hook of a project is no sample
		abTimed(b, filepath.Join(p.dir, "src", "deep"), payload(p.dir, -1), "/bin/sh", "-c", p.line)
	}
	n := len(builds)
	names := []string{"hook", "hook-cpu", "hook-plain", "hook-plain-cpu", "version", "version-cpu"}
	series := map[string]*abSeries{}
	for _, name := range names {
		series[name] = &abSeries{name: name, d: make([][]time.Duration, n)}
	}
	add := func(name string, k int, d time.Duration) { series[name].d[k] = append(series[name].d[k], d) }
	b.Logf("load average at start: %s", loadAverage())
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for j := range n {
			k := (i + j) % n
			p := projects[k]
			w, c := abTimed(b, filepath.Join(p.dir, "src", "deep"), payload(p.dir, i), "/bin/sh", "-c", p.line)
			add("hook", k, w)
			add("hook-cpu", k, c)
			p = plain[k]
			w, c = abTimed(b, filepath.Join(p.dir, "src", "deep"), payload(p.dir, i), "/bin/sh", "-c", p.line)
			add("hook-plain", k, w)
			add("hook-plain-cpu", k, c)
			w, c = abTimed(b, filepath.Join(p.dir, "src", "deep"), "", builds[k].bin, "version")
			add("version", k, w)
			add("version-cpu", k, c)
		}
	}
	b.StopTimer()
	b.Logf("load average at end: %s", loadAverage())
	for _, name := range names {
		series[name].report(b, builds)
	}
	for k, bd := range builds { // each build verifies its own ledgers
		benchRun(b, projects[k].dir, "", bd.bin, "audit", "verify")
		benchRun(b, plain[k].dir, "", bd.bin, "audit", "verify")
	}
	abInstructions(b, builds, func(k, r int) (dir, stdin, prog string, argv []string) {
		p := projects[k].dir
		return filepath.Join(p, "src", "deep"), payload(p, 5_000_000+r), filepath.Join(p, ".tree-ring", "bin", "tree-ring"),
			[]string{"--root", filepath.Join(p, ".tree-ring"), "integrations", "hook", "--harness", "codex", "--input-json-stdin"}
	})
}

// abInstructions reports the instructions of one hook process (executed
// directly, hook gives the k-th build's r-th run) and of one `version` of
// each build under callgrind, the median of three, when valgrind is
// installed: the load-independent figure beside the wall times.
func abInstructions(b *testing.B, builds []abBuild, hook func(k, r int) (dir, stdin, prog string, argv []string)) {
	b.Helper()
	for _, what := range []string{"hook", "version"} {
		var base float64
		for k, bd := range builds {
			var runs []float64
			for r := range 3 {
				dir, stdin, prog, argv := hook(k, r)
				if what == "version" {
					stdin, prog, argv = "", bd.bin, []string{"version"}
				}
				n, ok := benchInstructions(b, dir, stdin, "", what+"-"+bd.label, prog, argv...)
				if !ok {
					return
				}
				runs = append(runs, n)
			}
			slices.Sort(runs)
			b.ReportMetric(runs[1]/1e6, what+"-"+bd.label+"-Minstr")
			if k == 0 {
				base = runs[1]
			} else {
				b.ReportMetric(runs[1]/base, what+"-instr-"+bd.label+"/"+builds[0].label)
			}
		}
	}
}

// BenchmarkABImport times `tree-ring import` of the same 5,000 memories
// (TREE_RING_BENCH_MEMORIES) into an empty root, whole process, for every
// build; each iteration imports once per build, rotating the order, each
// into a fresh root. Reported per build: median wall and CPU in ms, the
// median's memories/s and the ratios to the first build's.
func BenchmarkABImport(b *testing.B) {
	builds := abBuilds(b)
	count := 5000
	if v := os.Getenv("TREE_RING_BENCH_MEMORIES"); v != "" {
		count = benchCount("TREE_RING_BENCH_MEMORIES")
	}
	dir := benchTempDir(b)
	f := filepath.Join(dir, "memories.jsonl")
	writeABMemories(b, f, "bench", count, abSummaries)
	n := len(builds)
	wall := &abSeries{name: "import", d: make([][]time.Duration, n)}
	cpu := &abSeries{name: "import-cpu", d: make([][]time.Duration, n)}
	b.Logf("load average at start: %s", loadAverage())
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for j := range n {
			k := (i + j) % n
			root := filepath.Join(dir, fmt.Sprintf("r%d-%d", i, k), ".tree-ring")
			if err := os.MkdirAll(filepath.Dir(root), 0o700); err != nil {
				b.Fatal(err)
			}
			w, c := abTimed(b, dir, "", builds[k].bin, "--root", root, "import", f)
			wall.d[k] = append(wall.d[k], w)
			cpu.d[k] = append(cpu.d[k], c)
			os.RemoveAll(filepath.Dir(root))
		}
	}
	b.StopTimer()
	b.Logf("load average at end: %s", loadAverage())
	wall.report(b, builds)
	cpu.report(b, builds)
	for k, bd := range builds {
		b.ReportMetric(float64(count)/quantile(wall.d[k], 0.5).Seconds(), "import-"+bd.label+"-memories/s")
	}
}
