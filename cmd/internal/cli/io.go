// Package cli is what the tree-ring and tree-ring-fleet commands share:
// the global flags and project root discovery, the one error table that
// maps errors to exit codes, diagnostic codes and path-free messages
// (docs/exit-codes.md), the stdout that remembers a failed write, and
// opening a store under --root. It holds no command.
package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// IO is where a command reads and writes; tests substitute buffers.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Getwd is the working directory project-root discovery starts from
	// (os.Getwd when nil).
	Getwd func() (string, error)
	// StderrTerminal makes --log-level lines human-readable and enables
	// the progress of long checks on stderr; a pipe gets JSON lines and
	// no progress.
	StderrTerminal bool
}

// DefaultIO is the process's own standard streams and environment.
func DefaultIO() IO {
	return IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		StderrTerminal: terminal(os.Stderr)}
}

// terminal reports whether f is a character device (a terminal), without
// a terminal library: a pipe or a file is not one.
func terminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// LogWriter is where --log-level lines go: zerolog's console writer on a
// terminal, the JSON lines themselves otherwise.
func (o IO) LogWriter() io.Writer {
	if o.StderrTerminal {
		return zerolog.ConsoleWriter{Out: o.Stderr, TimeFormat: time.RFC3339}
	}
	return o.Stderr
}

// OutputWriter is a command's stdout; it remembers the first failed write,
// so a report cut short is never taken for success. Not safe for
// concurrent use (a command writes its report from one goroutine).
type OutputWriter struct {
	W   io.Writer
	Err error
}

func (o *OutputWriter) Write(p []byte) (int, error) {
	if o.Err != nil {
		return 0, o.Err
	}
	n, err := o.W.Write(p)
	if err != nil {
		o.Err = err
	}
	return n, err
}

// OutputError is a command that did its work but could not write its
// report in full: its outcome is unknown to the caller, who may rerun it
// (every command is safe to rerun) or read it back with status.
type OutputError struct{ Err error }

func (e *OutputError) Error() string {
	return fmt.Sprintf("write stdout: %v; outcome indeterminate: the work was done but its report is incomplete", UnwrapPath(e.Err))
}

func (e *OutputError) Unwrap() error { return e.Err }

// Indeterminate is always true: see the type.
func (e *OutputError) Indeterminate() bool { return true }

// ErrorLine is the one stderr line of a failed command: "<prog>: " and the
// message on one line, with the paths below the project relative to it.
func ErrorLine(prog string, err error, root string) string {
	return prog + ": " + OneLine(ProjectRelative(err.Error(), root)) + "\n"
}

// OneLine joins a message's lines.
func OneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// ProjectRelative rewrites the absolute paths below the project that
// contains root (the parent of the store directory) in a message to
// project-relative ones: messages name where something failed without
// naming the user's directories.
func ProjectRelative(msg, root string) string {
	if root == "" {
		return msg
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return msg
	}
	project := filepath.Dir(abs)
	if project == "/" {
		return msg
	}
	msg = strings.ReplaceAll(msg, project+"/", "")
	var b strings.Builder
	for {
		i := strings.Index(msg, project)
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		rest := msg[i+len(project):]
		b.WriteString(msg[:i])
		if rest == "" || strings.ContainsRune(":;,)'\" ", rune(rest[0])) {
			b.WriteString(".")
		} else {
			b.WriteString(project) // a longer name that merely starts the same
		}
		msg = rest
	}
}
