package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// exitIndeterminate is the exit code of a command whose outcome is unknown:
// it may have taken effect (docs/exit-codes.md).
const exitIndeterminate = 4

// indeterminate reports whether err says its outcome is unknown: a commit
// whose last sync failed after the meta page reached the ledger, a file
// whose directory sync failed after it was linked into place, a report
// that could not be written after the work was done.
func indeterminate(err error) bool {
	var ie interface{ Indeterminate() bool }
	return errors.As(err, &ie) && ie.Indeterminate()
}

// outputWriter is the command's stdout; it remembers the first failed
// write, so a report cut short is never taken for success. Not safe for
// concurrent use (a command writes its report from one goroutine).
type outputWriter struct {
	w   io.Writer
	err error
}

func (o *outputWriter) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	if err != nil {
		o.err = err
	}
	return n, err
}

// OutputError is a command that did its work but could not write its
// report in full: its outcome is unknown to the caller, who may rerun it
// (every command is safe to rerun) or read it back with status.
type OutputError struct{ Err error }

func (e *OutputError) Error() string {
	return fmt.Sprintf("write stdout: %v; outcome indeterminate: the work was done but its report is incomplete", unwrapPath(e.Err))
}

func (e *OutputError) Unwrap() error { return e.Err }

// Indeterminate is always true: see the type.
func (e *OutputError) Indeterminate() bool { return true }

// projectRelative rewrites the absolute paths below the project that
// contains root (the parent of the store directory) in a message to
// project-relative ones: messages name where something failed without
// naming the user's directories.
func projectRelative(msg, root string) string {
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
