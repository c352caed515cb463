package sysfault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Supported reports whether Run works on this platform.
const Supported = true

// numbers maps the syscall names a Plan may name to their amd64 numbers.
var numbers = map[string]uint64{
	"write":           unix.SYS_WRITE,
	"pwrite64":        unix.SYS_PWRITE64,
	"writev":          unix.SYS_WRITEV,
	"pwritev":         unix.SYS_PWRITEV,
	"pwritev2":        unix.SYS_PWRITEV2,
	"fsync":           unix.SYS_FSYNC,
	"fdatasync":       unix.SYS_FDATASYNC,
	"sync_file_range": unix.SYS_SYNC_FILE_RANGE,
	"ftruncate":       unix.SYS_FTRUNCATE,
	"fallocate":       unix.SYS_FALLOCATE,
	"copy_file_range": unix.SYS_COPY_FILE_RANGE,
	"sendfile":        unix.SYS_SENDFILE,
	"open":            unix.SYS_OPEN,
	"openat":          unix.SYS_OPENAT,
	"creat":           unix.SYS_CREAT,
	"rename":          unix.SYS_RENAME,
	"renameat":        unix.SYS_RENAMEAT,
	"renameat2":       unix.SYS_RENAMEAT2,
	"mkdir":           unix.SYS_MKDIR,
	"mkdirat":         unix.SYS_MKDIRAT,
	"unlink":          unix.SYS_UNLINK,
	"unlinkat":        unix.SYS_UNLINKAT,
	"link":            unix.SYS_LINK,
	"linkat":          unix.SYS_LINKAT,
	"close":           unix.SYS_CLOSE,
	"fchmod":          unix.SYS_FCHMOD,
	"flock":           unix.SYS_FLOCK,
	"mmap":            unix.SYS_MMAP,
}

// fdArg is the argument index holding the file descriptor a call acts on,
// for the calls that act on one (copy_file_range and sendfile: the output).
var fdArg = map[string]int{
	"write": 0, "pwrite64": 0, "writev": 0, "pwritev": 0, "pwritev2": 0,
	"fsync": 0, "fdatasync": 0, "sync_file_range": 0, "ftruncate": 0, "fallocate": 0,
	"copy_file_range": 2, "sendfile": 0, "close": 0, "fchmod": 0, "flock": 0,
}

// pathArgs says where a path-taking call's paths are: the index of the
// directory descriptor (-1 for none: relative to the working directory) and
// of the path, for the first and, for two-path calls, the second path.
var pathArgs = map[string][2][2]int{
	"open":      {{-1, 0}, {-1, -1}},
	"creat":     {{-1, 0}, {-1, -1}},
	"openat":    {{0, 1}, {-1, -1}},
	"mkdir":     {{-1, 0}, {-1, -1}},
	"mkdirat":   {{0, 1}, {-1, -1}},
	"unlink":    {{-1, 0}, {-1, -1}},
	"unlinkat":  {{0, 1}, {-1, -1}},
	"rename":    {{-1, 0}, {-1, 1}},
	"renameat":  {{0, 1}, {2, 3}},
	"renameat2": {{0, 1}, {2, 3}},
	"link":      {{-1, 0}, {-1, 1}},
	"linkat":    {{0, 1}, {2, 3}},
}

// Run starts cmd under ptrace, counts the calls plan names across every
// thread and forked child, fails the Nth, and waits for the whole process
// group to end. The tracer runs on a goroutine locked to its own OS thread
// (ptrace requests must come from the thread that attached); that thread
// is discarded afterwards. Children that leave the process group
// (setpgid, setsid) are not waited for. Run is safe to call from
// concurrent goroutines: each run traces only its own process group.
func Run(ctx context.Context, cmd Command, plan Plan) (*Result, error) {
	want := map[uint64]string{}
	for _, name := range plan.Syscalls {
		nr, ok := numbers[name]
		if !ok {
			return nil, fmt.Errorf("sysfault: unknown syscall %q", name)
		}
		want[nr] = name
	}
	if len(want) == 0 {
		return nil, errors.New("sysfault: the plan names no syscall")
	}
	if plan.Errno == 0 {
		plan.Errno = syscall.EIO
	}
	if cmd.Timeout <= 0 {
		cmd.Timeout = time.Minute
	}
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		// Never unlocked: the thread dies with the goroutine, so no other
		// goroutine inherits a thread that was a tracer.
		runtime.LockOSThread()
		res, err := trace(ctx, cmd, plan, want)
		done <- outcome{res, err}
	}()
	o := <-done
	return o.res, o.err
}

func trace(ctx context.Context, cmd Command, plan Plan, want map[uint64]string) (*Result, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	proc, err := os.StartProcess(cmd.Path, append([]string{cmd.Path}, cmd.Args...), &os.ProcAttr{
		Dir:   cmd.Dir,
		Env:   cmd.Env,
		Files: []*os.File{inR, outW, errW},
		Sys:   &syscall.SysProcAttr{Ptrace: true, Setpgid: true},
	})
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, err
	}
	// The os.Process handle is never waited on: the loop below reaps.
	defer proc.Release()
	pid := proc.Pid
	var stdout, stderr bytes.Buffer
	copied := make(chan struct{}, 3)
	go func() { inW.Write(cmd.Stdin); inW.Close(); copied <- struct{}{} }()
	go func() { io.Copy(&stdout, outR); outR.Close(); copied <- struct{}{} }()
	go func() { io.Copy(&stderr, errR); errR.Close(); copied <- struct{}{} }()

	res := &Result{ExitCode: -1}
	// The child stops with SIGTRAP after its execve (PTRACE_TRACEME).
	var ws syscall.WaitStatus
	if _, err := wait(pid, &ws); err != nil {
		syscall.Kill(-pid, syscall.SIGKILL)
		return nil, fmt.Errorf("sysfault: first stop: %w", err)
	}
	if !ws.Stopped() {
		return nil, fmt.Errorf("sysfault: the child did not stop after exec (status %#x)", ws)
	}
	opts := unix.PTRACE_O_TRACESYSGOOD | unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEFORK |
		unix.PTRACE_O_TRACEVFORK | unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_EXITKILL
	if err := unix.PtraceSetOptions(pid, opts); err != nil {
		syscall.Kill(-pid, syscall.SIGKILL)
		return nil, fmt.Errorf("sysfault: set options: %w", err)
	}

	timedOut := make(chan struct{})
	stopTimer := make(chan struct{})
	defer close(stopTimer)
	go func() {
		t := time.NewTimer(cmd.Timeout)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		case <-stopTimer:
			return
		}
		close(timedOut)
		syscall.Kill(-pid, syscall.SIGKILL)
	}()

	t := &tracer{plan: plan, want: want, res: res,
		inSyscall: map[int]bool{}, pending: map[int]bool{}, started: map[int]bool{pid: true}, pgid: pid}
	if err := unix.PtraceSyscall(pid, 0); err != nil {
		syscall.Kill(-pid, syscall.SIGKILL)
		return nil, fmt.Errorf("sysfault: resume: %w", err)
	}
	for {
		tid, err := wait(-pid, &ws)
		if errors.Is(err, syscall.ECHILD) {
			break
		}
		if err != nil {
			syscall.Kill(-pid, syscall.SIGKILL)
			return nil, fmt.Errorf("sysfault: wait: %w", err)
		}
		switch {
		case ws.Exited():
			if tid == pid {
				res.ExitCode = ws.ExitStatus()
			}
			t.forget(tid)
		case ws.Signaled():
			if tid == pid {
				res.ExitCode, res.Signal = -1, ws.Signal()
			}
			t.forget(tid)
		case ws.Stopped():
			// A thread that died between its stop and this request (ESRCH)
			// is reaped by a later wait; nothing else can fail here.
			_ = unix.PtraceSyscall(tid, t.stop(tid, ws))
		}
	}
	for range 3 {
		<-copied
	}
	select {
	case <-timedOut:
		res.TimedOut = true
	default:
	}
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	return res, nil
}

func wait(pid int, ws *syscall.WaitStatus) (int, error) {
	for {
		tid, err := syscall.Wait4(pid, ws, syscall.WALL, nil)
		if !errors.Is(err, syscall.EINTR) {
			return tid, err
		}
	}
}

// tracer is the per-run state of the stop loop; only the tracer thread
// touches it.
type tracer struct {
	plan Plan
	want map[uint64]string
	res  *Result
	// inSyscall toggles at each syscall stop of a thread: entry, exit.
	inSyscall map[int]bool
	// pending marks a thread whose current call was skipped on entry and
	// needs its return value set on exit.
	pending map[int]bool
	// started records threads past their initial stop, so that a new
	// thread's first SIGSTOP is swallowed and a later one delivered.
	started map[int]bool
	count   int
	pgid    int
}

func (t *tracer) forget(tid int) {
	delete(t.inSyscall, tid)
	delete(t.pending, tid)
	delete(t.started, tid)
}

// stop handles one ptrace stop of tid and returns the signal to deliver
// when resuming it.
func (t *tracer) stop(tid int, ws syscall.WaitStatus) int {
	sig := ws.StopSignal()
	if !t.started[tid] {
		t.started[tid] = true
		if sig == syscall.SIGSTOP {
			return 0
		}
	}
	switch {
	case sig == syscall.SIGTRAP|0x80:
		entering := !t.inSyscall[tid]
		t.inSyscall[tid] = entering
		if entering {
			t.enter(tid)
		} else if t.pending[tid] {
			delete(t.pending, tid)
			var regs unix.PtraceRegs
			if unix.PtraceGetRegs(tid, &regs) == nil {
				regs.Rax = uint64(-int64(t.plan.Errno))
				_ = unix.PtraceSetRegs(tid, &regs)
			}
		}
		return 0
	case sig == syscall.SIGTRAP && ws.TrapCause() != 0:
		if ws.TrapCause() == unix.PTRACE_EVENT_EXEC {
			// The exec'ing thread now has the leader's id and is inside
			// execve; every other thread is gone.
			if former, err := unix.PtraceGetEventMsg(tid); err == nil && int(former) != tid {
				t.forget(int(former))
			}
			t.inSyscall[tid] = true
			t.started[tid] = true
		}
		return 0
	}
	return int(sig)
}

func (t *tracer) enter(tid int) {
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &regs); err != nil {
		return
	}
	name, ok := t.want[regs.Orig_rax]
	if !ok {
		return
	}
	c := Call{Name: name, Tid: tid, Args: [6]uint64{regs.Rdi, regs.Rsi, regs.Rdx, regs.R10, regs.R8, regs.R9}}
	if i, ok := fdArg[name]; ok {
		c.Path = fdPath(tid, int(int32(c.Args[i])))
	}
	if p, ok := pathArgs[name]; ok {
		c.Path = pathAt(tid, c.Args, p[0])
		c.Path2 = pathAt(tid, c.Args, p[1])
	}
	if t.plan.Match != nil && !t.plan.Match(c) {
		return
	}
	t.count++
	t.res.Calls = append(t.res.Calls, c)
	if t.plan.Nth == 0 || t.count < t.plan.Nth || (t.count > t.plan.Nth && !t.plan.Persist) {
		return
	}
	if t.plan.Kill {
		// The thread is stopped at entry: SIGKILL ends it before the call
		// runs, and every other thread of the group with it.
		t.res.Injected = append(t.res.Injected, c)
		syscall.Kill(-t.pgid, syscall.SIGKILL)
		return
	}
	// An invalid number makes the kernel skip the call (it would return
	// ENOSYS); the exit stop replaces that with the plan's errno.
	regs.Orig_rax = ^uint64(0)
	if unix.PtraceSetRegs(tid, &regs) == nil {
		t.pending[tid] = true
		t.res.Injected = append(t.res.Injected, c)
	}
}

func fdPath(tid, fd int) string {
	p, err := os.Readlink("/proc/" + strconv.Itoa(tid) + "/fd/" + strconv.Itoa(fd))
	if err != nil {
		return ""
	}
	return p
}

// pathAt reads the path at argument index where[1], resolved against the
// descriptor at where[0] (or the working directory); "" when absent.
func pathAt(tid int, args [6]uint64, where [2]int) string {
	if where[1] < 0 {
		return ""
	}
	p := peekString(tid, uintptr(args[where[1]]))
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	base := ""
	if where[0] >= 0 && int32(args[where[0]]) != unix.AT_FDCWD {
		base = fdPath(tid, int(int32(args[where[0]])))
	} else {
		base, _ = os.Readlink("/proc/" + strconv.Itoa(tid) + "/cwd")
	}
	if base == "" {
		return p
	}
	return filepath.Join(base, p)
}

// peekString reads a NUL-terminated string of at most 4096 bytes from the
// stopped thread's memory.
func peekString(tid int, addr uintptr) string {
	if addr == 0 {
		return ""
	}
	var out []byte
	buf := make([]byte, 256)
	for len(out) < 4096 {
		n, err := unix.PtracePeekData(tid, addr+uintptr(len(out)), buf)
		if n > 0 {
			if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
				return string(append(out, buf[:i]...))
			}
			out = append(out, buf[:n]...)
		}
		if err != nil || n == 0 {
			break
		}
	}
	return string(out)
}
