package acceptance

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tsNode returns a Node.js that runs TypeScript by type stripping (the Pi
// extension is .ts; Pi loads it through its own loader): the machine's node
// when it is 22.6 or newer, else the acceptance cache's node 22.19 when it
// is installed (or TREE_RING_ACCEPTANCE=1 installs it). Otherwise the test
// skips, saying so.
func tsNode(t *testing.T) string {
	t.Helper()
	if node, err := exec.LookPath("node"); err == nil {
		out, _ := exec.Command(node, "--version").Output()
		var major, minor int
		if v := strings.Split(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), "."); len(v) >= 2 {
			major, _ = strconv.Atoi(v[0])
			minor, _ = strconv.Atoi(v[1])
		}
		if major > 22 || major == 22 && minor >= 6 {
			return node
		}
	}
	cached := filepath.Join(cacheDir(t), "clients", node22.Name+"@"+node22.Version, "node_modules", ".bin", node22.Bin)
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(cached))), ".installed")); err == nil && strings.HasPrefix(string(b), node22.Package+"@") {
		return cached
	}
	if os.Getenv("TREE_RING_ACCEPTANCE") == "1" {
		return install(t, node22)
	}
	t.Skipf("the fake Pi host needs Node >= 22.6 (type stripping); this machine's node is older and %s is not in the acceptance cache (.ci/acceptance installs it)", node22)
	return ""
}

// TestPiExtensionFailsOpen runs the published Pi extension in a fake Pi host
// against fake tree-ring programs: each failure of the child process leaves
// the host running and the handler resolving to no message (Pi starts
// without memory), with a warning when Pi has a UI; a working preflight
// yields its context as a hidden message, and a sensitive hint is retried
// with the neutral hint.
func TestPiExtensionFailsOpen(t *testing.T) {
	node := tsNode(t)
	src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "adapters", "pi", "bridge", ".pi", "extensions", "tree-ring-memory.ts"))
	if err != nil {
		t.Fatal(err)
	}
	host, err := filepath.Abs(filepath.Join("testdata", "fakepi.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	const ok = `cat > "$0.stdin"; printf '%s\n' '{"context":"CTX from tree-ring","state":"active","receipt":{}}'`
	big := strings.Repeat("x", 1<<20) // larger than a pipe buffer: a child that never reads makes the write fail with EPIPE
	cases := []struct {
		name, program, prompt string
		noBinary              bool
		want                  string // the message content; "" for none
		notice                string
	}{
		{name: "preflight succeeds", program: ok, prompt: "fix the parser", want: "CTX from tree-ring"},
		{name: "exits before reading stdin (EPIPE)", program: `exit 3`, prompt: big, notice: "exit 3"},
		{name: "exits 0 before reading stdin", program: `exit 0`, prompt: big, notice: "malformed output"},
		{name: "non-zero exit", program: `cat >/dev/null; echo 'tree-ring: boom' >&2; exit 2`, prompt: "p", notice: "exit 2"},
		{name: "malformed output", program: `cat >/dev/null; echo 'not json'`, prompt: "p", notice: "malformed output"},
		{name: "context not a string", program: `cat >/dev/null; echo '{"context":5}'`, prompt: "p", notice: "malformed output"},
		{name: "killed by a signal", program: `cat >/dev/null; kill -9 $$`, prompt: "p", notice: "exit null"},
		{name: "no program at all (spawn fails)", noBinary: true, prompt: "p", notice: "spawn"},
		{name: "sensitive hint retried with the neutral hint",
			program: `in=$(cat); case "$in" in *'project startup constraints'*) printf '%s\n' '{"context":"CTX neutral","state":"active","receipt":{}}';; *) echo 'tree-ring: sensitive-task-hint' >&2; exit 2;; esac`,
			prompt:  "p", want: "CTX neutral"},
		{name: "hangs past the timeout", program: `exec sleep 60`, prompt: "p", notice: "timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ext := filepath.Join(dir, "tree-ring-memory.mts")
			prompt := filepath.Join(dir, "prompt.txt")
			bin := filepath.Join(dir, "proj", ".tree-ring", "bin")
			for _, err := range []error{os.MkdirAll(bin, 0o755), os.WriteFile(ext, src, 0o644), os.WriteFile(prompt, []byte(c.prompt), 0o644)} {
				if err != nil {
					t.Fatal(err)
				}
			}
			if !c.noBinary {
				if err := os.WriteFile(filepath.Join(bin, "tree-ring"), []byte("#!/bin/sh\n"+c.program+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(node, "--no-warnings", "--experimental-strip-types", host, ext, filepath.Join(dir, "proj"), prompt)
			cmd.Env = []string{"PATH=" + filepath.Join(dir, "empty-path") + ":/usr/bin:/bin", "HOME=" + dir}
			if c.noBinary {
				cmd.Env[0] = "PATH=" + filepath.Join(dir, "empty-path")
			}
			start := time.Now()
			out, err := cmd.Output()
			if err != nil {
				stderr := ""
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = string(ee.Stderr)
				}
				t.Fatalf("the fake Pi host died: %v\n%s", err, stderr)
			}
			var got struct {
				Result *struct {
					Message struct {
						CustomType string `json:"customType"`
						Content    string `json:"content"`
						Display    bool   `json:"display"`
					} `json:"message"`
				} `json:"result"`
				Notices []struct{ Text, Level string } `json:"notices"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("host output %q: %v", out, err)
			}
			switch {
			case c.want == "" && got.Result != nil:
				t.Fatalf("a failed preflight produced a message: %s", out)
			case c.want != "" && (got.Result == nil || got.Result.Message.Content != c.want || got.Result.Message.Display || got.Result.Message.CustomType != "tree-ring-preflight"):
				t.Fatalf("message %s, want hidden content %q", out, c.want)
			}
			if c.notice != "" && (len(got.Notices) != 1 || got.Notices[0].Level != "warning" || !strings.Contains(got.Notices[0].Text, c.notice)) {
				t.Fatalf("notices %+v, want one warning naming %q", got.Notices, c.notice)
			}
			if c.notice == "" && len(got.Notices) != 0 {
				t.Fatalf("unexpected notices %+v", got.Notices)
			}
			if c.name == "preflight succeeds" {
				var req map[string]any
				b, _ := os.ReadFile(filepath.Join(bin, "tree-ring.stdin"))
				if err := json.Unmarshal(b, &req); err != nil || len(req) != 4 || req["agent_profile"] != "pi" || req["task_hint"] != "fix the parser" {
					t.Fatalf("the preflight's stdin %s (%v)", b, err)
				}
			}
			t.Logf("%s in %s", c.name, time.Since(start).Round(time.Millisecond))
		})
	}
}
