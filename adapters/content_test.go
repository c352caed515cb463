package adapters

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHookCommandAbsentStore runs the exact published command line through
// sh -c, as Codex and Claude Code do, in a checkout without .tree-ring: it
// must exit 0 with no output and create nothing.
func TestHookCommandAbsentStore(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	for _, h := range []string{"codex", "claude-code"} {
		dir := t.TempDir()
		cmd := exec.Command("sh", "-c", HookCommand(h))
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
		cmd.Stdin = strings.NewReader(`{"session_id":"s","cwd":".","hook_event_name":"SessionStart"}`)
		out, err := cmd.CombinedOutput()
		if err != nil || len(out) != 0 {
			t.Fatalf("%s: err %v, output %q", h, err, out)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("%s: the hook created %v", h, entries)
		}
	}
}

// TestHookCommandPrefersLocalBinary: with .tree-ring present the command
// execs the project-local binary with the documented arguments.
func TestHookCommandPrefersLocalBinary(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, ".tree-ring", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	fake := "#!/bin/sh\necho \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "tree-ring"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", HookCommand("codex"))
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	want := "--root " + real + "/.tree-ring integrations hook --harness codex --input-json-stdin\n"
	if got := string(out); got != want && got != strings.Replace(want, real, dir, 1) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestGuidanceCommandsAreInert: every command line the guidance files
// publish holds nothing a shell or an XML escape treats specially, and
// run through sh -c as printed (placeholders unreplaced) and with the
// placeholders replaced as CLI.md says, from the project root, it reaches
// the project's binary as exactly its words and creates no stray file.
func TestGuidanceCommandsAreInert(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, ".tree-ring", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "tree-ring"), []byte("#!/bin/sh\nfor a; do printf '[%s]' \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	fill := strings.NewReplacer("QUERY", `"release checklist"`, "SUMMARY", `"Run the linter before every push"`,
		"TYPE", "lesson", "RING", "cambium", "PROJECT", "app")
	var lines []string
	for _, f := range GuidanceFiles() {
		for _, part := range strings.Split(string(f.Data), "`")[1:] {
			if strings.HasPrefix(part, ".tree-ring/bin/tree-ring ") || strings.HasPrefix(part, "tree-ring ") {
				lines = append(lines, part)
			}
		}
		if strings.Contains(string(f.Data), "$(") || strings.Contains(string(f.Data), "2>") {
			t.Errorf("%s: command substitution or a redirection", f.Path)
		}
	}
	if len(lines) < 4 {
		t.Fatalf("guidance command lines: %q", lines)
	}
	for _, l := range lines {
		if strings.ContainsAny(l, "$`\"'<>&|;()\\*?[]{}~#!") {
			t.Errorf("a shell or XML metacharacter in %s", l)
		}
		if !strings.HasPrefix(l, ".tree-ring/bin/tree-ring ") {
			continue // the SKILL.md summary names the command; CLI.md's line is the runnable one
		}
		for _, run := range []string{l, fill.Replace(l)} {
			cmd := exec.Command("sh", "-c", run)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
			out, err := cmd.CombinedOutput()
			words := strings.Fields(strings.TrimPrefix(run, ".tree-ring/bin/tree-ring "))
			if run != l {
				words = nil // the quoted values are one word each
				for i, w := range strings.Split(strings.TrimPrefix(run, ".tree-ring/bin/tree-ring "), `"`) {
					if i%2 == 1 {
						words = append(words, w)
					} else {
						words = append(words, strings.Fields(w)...)
					}
				}
			}
			if want := "[" + strings.Join(words, "][") + "]"; err != nil || string(out) != want {
				t.Errorf("sh -c %s: %v\n got %s\nwant %s", run, err, out, want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("sh -c %s left %v", run, entries)
			}
		}
	}
}
