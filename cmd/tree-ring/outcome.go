package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/bolt"
)

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

// LedgerMissingError is a write to a root whose activation.json names a
// store but whose ledger is gone (deleted, or never created: the Rust Tree
// Ring initialized the project). Nothing is created: a new ledger would
// mint another store id than the one every bridge and receipt names. The
// repair is init, which adopts the manifest with its store id
// (docs/adoption.md), or a backup.
type LedgerMissingError struct{ Path string }

func (e *LedgerMissingError) Error() string {
	return fmt.Sprintf("%s: the ledger is missing although activation.json names its store; nothing was created; repair: run `tree-ring init` to adopt activation.json (its store id is kept), or restore ledger.db from a backup", e.Path)
}

// manifestNamesStore reports whether the root holds an activation.json (a
// store was initialized here).
func (g *Globals) manifestNamesStore() bool {
	_, err := os.Lstat(filepath.Join(g.Root, filepath.Base(adapters.ManifestPath)))
	return err == nil
}

// noLedger is the refusal of a command that needs the ledger and finds
// none: *LedgerMissingError when activation.json names a store, else
// generic.
func (g *Globals) noLedger(generic error) error {
	if g.manifestNamesStore() {
		return &LedgerMissingError{Path: filepath.Join(g.Root, bolt.LedgerFile)}
	}
	return generic
}

// Diagnostic is the code a failed run records (docs/runs.md).
func (e *LedgerMissingError) Diagnostic() string { return "ledger_missing" }

// PartialError is a command that failed after part of its work was
// committed: not "nothing changed" (exit 2) but an outcome the caller must
// look at (exit 4). Done says what was committed and how to go on.
type PartialError struct {
	Err  error
	Done string
}

func (e *PartialError) Error() string { return fmt.Sprintf("%v; %s", e.Err, e.Done) }

func (e *PartialError) Unwrap() error { return e.Err }

// Indeterminate is always true: see the type.
func (e *PartialError) Indeterminate() bool { return true }
