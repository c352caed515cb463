package sysfault

import (
	"syscall"
	"time"
)

// Command is the child to run. Env is its whole environment; Stdin is fed
// through a pipe. Timeout (default one minute) kills the process group.
type Command struct {
	Path    string
	Args    []string // argv[1:]
	Env     []string
	Dir     string
	Stdin   []byte
	Timeout time.Duration
}

// Call is one system call of the child as seen at its entry.
type Call struct {
	Name string
	Tid  int
	Args [6]uint64
	// Path is the file the call acts on: the target of its descriptor
	// (readlink of /proc/<tid>/fd/<fd>: "pipe:[…]", "anon_inode:[eventfd]"
	// and the like for non-files) or, for a path-taking call, its first path
	// made absolute against its directory descriptor or working directory.
	// Path2 is a two-path call's second path (rename's destination).
	Path, Path2 string
}

// Flags is an open call's flags argument (0 for other calls).
func (c Call) Flags() int {
	switch c.Name {
	case "open":
		return int(c.Args[1])
	case "openat":
		return int(c.Args[2])
	case "creat":
		return syscall.O_CREAT | syscall.O_WRONLY | syscall.O_TRUNC
	}
	return 0
}

// Plan says which calls count and which one fails.
type Plan struct {
	// Syscalls are the names of the calls that count (see the package's
	// table; an unknown name is an error).
	Syscalls []string
	// Match, when set, further decides whether a call counts. It runs on the
	// tracer's thread while the child is stopped; it must not block.
	Match func(Call) bool
	// Nth is the 1-based occurrence, across all threads, that fails; 0
	// fails nothing (a counting pass).
	Nth int
	// Persist fails every counted call from the Nth on (a disk that stays
	// full), instead of the Nth alone.
	Persist bool
	// Errno is what the failed call returns (EIO when zero).
	Errno syscall.Errno
	// Kill, instead of failing the Nth call, kills the whole process group
	// with SIGKILL at its entry, before the kernel runs it: a crash at an
	// exact point (Persist is then meaningless).
	Kill bool
}

// Result is what a traced run did.
type Result struct {
	// Calls lists every counted call in the order the child made them.
	Calls []Call
	// Injected lists the calls that were failed.
	Injected []Call
	// ExitCode is the child's exit status, or -1 when a signal ended it
	// (Signal says which).
	ExitCode int
	Signal   syscall.Signal
	// TimedOut is set when the Timeout killed the child.
	TimedOut       bool
	Stdout, Stderr []byte
}
