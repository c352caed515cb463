// Package sysfault runs a child process under ptrace and fails one system
// call of it: the Nth call, counted across every thread (and forked child)
// of the process, of the syscalls a Plan names and its Match accepts. The
// failed call is skipped on entry (its number replaced by an invalid one, so
// the kernel does nothing) and made to return the Plan's errno on exit.
//
// strace's inject=...:when=N counts per thread; a Go program moves file
// syscalls between threads, so "the second fsync of the process" is only
// well defined when the count is global, which is what this package does.
// A counting pass (Nth 0) lists every matching call with the file it
// touches, so a test can enumerate the occurrences first and then fail each
// in turn.
//
// Linux on amd64 only (the syscall numbers and registers are amd64's); the
// tests skip elsewhere. It is test tooling for the acceptance suite and has
// no other user.
package sysfault
