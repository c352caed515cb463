package sysfault

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// victim builds testdata/victim into the test's temp dir.
func victim(t *testing.T) string {
	t.Helper()
	if !Supported {
		t.Skip("sysfault needs linux/amd64")
	}
	bin := filepath.Join(t.TempDir(), "victim")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/victim").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// inDir counts only calls on files below dir.
func inDir(dir string) func(Call) bool {
	return func(c Call) bool { return strings.HasPrefix(c.Path, dir+"/") }
}

func run(t *testing.T, bin string, plan Plan, args ...string) *Result {
	t.Helper()
	res, err := Run(context.Background(), Command{Path: bin, Args: args, Env: []string{"GOMAXPROCS=4"}}, plan)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// failures returns the lines of the victim's output that report an error.
func failures(out []byte) []string {
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasSuffix(l, " ok") {
			got = append(got, l)
		}
	}
	return got
}

func TestCountingPassListsEveryCallAcrossThreads(t *testing.T) {
	bin := victim(t)
	dir := t.TempDir()
	res := run(t, bin, Plan{Syscalls: []string{"fsync"}, Match: inDir(dir)}, "sync", dir, "7")
	if res.ExitCode != 0 || len(failures(res.Stdout)) != 0 {
		t.Fatalf("exit %d, output:\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if len(res.Calls) != 7 || len(res.Injected) != 0 {
		t.Fatalf("calls %d injected %d, want 7 and 0", len(res.Calls), len(res.Injected))
	}
	tids := map[int]bool{}
	for i, c := range res.Calls {
		tids[c.Tid] = true
		if want := filepath.Join(dir, fmt.Sprintf("f%d", i)); c.Path != want || c.Name != "fsync" {
			t.Errorf("call %d: %s %q, want fsync %q", i, c.Name, c.Path, want)
		}
	}
	if len(tids) < 2 {
		t.Fatalf("the victim's fsyncs ran on %d thread(s); the test needs several", len(tids))
	}
}

func TestInjectsTheNthOccurrenceCountedAcrossThreads(t *testing.T) {
	bin := victim(t)
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.ENOSPC} {
		for n := 1; n <= 5; n++ {
			t.Run(fmt.Sprintf("%s/%d", errno, n), func(t *testing.T) {
				dir := t.TempDir()
				res := run(t, bin, Plan{Syscalls: []string{"fsync", "fdatasync"}, Match: inDir(dir), Nth: n, Errno: errno}, "sync", dir, "5")
				want := []string{fmt.Sprintf("fsync %d sync %s: %s", n-1, filepath.Join(dir, fmt.Sprintf("f%d", n-1)), errno.Error())}
				if got := failures(res.Stdout); strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("failures %q, want %q", got, want)
				}
				if len(res.Injected) != 1 || res.Injected[0] != res.Calls[n-1] || len(res.Calls) != 5 {
					t.Fatalf("injected %+v of %d calls", res.Injected, len(res.Calls))
				}
			})
		}
	}
}

func TestPersistFailsEveryLaterOccurrence(t *testing.T) {
	bin := victim(t)
	dir := t.TempDir()
	res := run(t, bin, Plan{Syscalls: []string{"write"}, Match: inDir(dir), Nth: 3, Persist: true, Errno: syscall.ENOSPC}, "sync", dir, "5")
	var want []string
	for i := 2; i < 5; i++ {
		want = append(want, fmt.Sprintf("write %d write %s: no space left on device", i, filepath.Join(dir, fmt.Sprintf("f%d", i))))
	}
	if got := failures(res.Stdout); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("failures %q, want %q", got, want)
	}
	if len(res.Injected) != 3 {
		t.Fatalf("injected %d calls, want 3", len(res.Injected))
	}
}

func TestMatchSeesOpenFlagsAndBothRenamePaths(t *testing.T) {
	bin := victim(t)
	dir := t.TempDir()
	creates := func(c Call) bool { return c.Flags()&syscall.O_CREAT != 0 && inDir(dir)(c) }
	res := run(t, bin, Plan{Syscalls: []string{"open", "openat", "creat"}, Match: creates, Nth: 2, Errno: syscall.ENOSPC}, "sync", dir, "3")
	if len(res.Calls) != 3 || res.Calls[1].Path != filepath.Join(dir, "f1") {
		t.Fatalf("creating opens %+v", res.Calls)
	}
	if got := failures(res.Stdout); len(got) != 2 || !strings.HasPrefix(got[0], "create 1 open ") || !strings.HasPrefix(got[1], "rename 1 ") {
		t.Fatalf("failures %q, want the second create and hence its rename", got)
	}

	dir = t.TempDir()
	res = run(t, bin, Plan{Syscalls: []string{"rename", "renameat", "renameat2"}, Match: inDir(dir), Nth: 1}, "sync", dir, "2")
	if len(res.Calls) != 2 || res.Calls[0].Path != filepath.Join(dir, "f0") || res.Calls[0].Path2 != filepath.Join(dir, "final-0") {
		t.Fatalf("renames %+v", res.Calls)
	}
	if _, err := os.Stat(filepath.Join(dir, "f0")); err != nil {
		t.Fatalf("the failed rename was not skipped: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "final-1")); err != nil {
		t.Fatalf("the second rename did not run: %v", err)
	}
}

func TestFollowsForkedChildren(t *testing.T) {
	bin := victim(t)
	dir := t.TempDir()
	res := run(t, bin, Plan{Syscalls: []string{"fsync"}, Match: inDir(dir), Nth: 4}, "spawn", dir, "4")
	if len(res.Calls) != 4 || res.ExitCode != 0 {
		t.Fatalf("calls %d exit %d, output:\n%s", len(res.Calls), res.ExitCode, res.Stdout)
	}
	if got := failures(res.Stdout); len(got) != 1 || !strings.HasPrefix(got[0], "fsync 3 ") {
		t.Fatalf("failures %q, want the child's fourth fsync", got)
	}
}

func TestPassesStdinAndExitCode(t *testing.T) {
	bin := victim(t)
	res, err := Run(context.Background(), Command{Path: bin, Args: []string{"echo"}, Stdin: []byte("12345")}, Plan{Syscalls: []string{"fsync"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || string(res.Stdout) != "5\n" || res.TimedOut {
		t.Fatalf("exit %d stdout %q timed out %v", res.ExitCode, res.Stdout, res.TimedOut)
	}
}

func TestTimeoutKillsTheChild(t *testing.T) {
	bin := victim(t)
	start := time.Now()
	res, err := Run(context.Background(), Command{Path: bin, Args: []string{"sleep"}, Timeout: 300 * time.Millisecond}, Plan{Syscalls: []string{"fsync"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.Signal != syscall.SIGKILL || res.ExitCode != -1 {
		t.Fatalf("timed out %v signal %v exit %d", res.TimedOut, res.Signal, res.ExitCode)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Run returned after %v", d)
	}
}

func TestRejectsAnUnknownSyscall(t *testing.T) {
	if _, err := Run(context.Background(), Command{Path: "/bin/true"}, Plan{Syscalls: []string{"fsnyc"}}); err == nil || !strings.Contains(err.Error(), `"fsnyc"`) {
		t.Fatalf("err %v", err)
	}
	if _, err := Run(context.Background(), Command{Path: "/bin/true"}, Plan{}); err == nil {
		t.Fatal("an empty plan was accepted")
	}
}

func TestKillEndsTheProcessBeforeTheNthCall(t *testing.T) {
	bin := victim(t)
	dir := t.TempDir()
	res := run(t, bin, Plan{Syscalls: []string{"rename", "renameat", "renameat2"}, Match: inDir(dir), Nth: 2, Kill: true}, "sync", dir, "3")
	if res.Signal != syscall.SIGKILL || len(res.Injected) != 1 {
		t.Fatalf("signal %v injected %d", res.Signal, len(res.Injected))
	}
	for name, want := range map[string]bool{"final-0": true, "f1": true, "final-1": false, "f2": true} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s exists %v, want %v", name, err == nil, want)
		}
	}
}
