package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/strictjson"
)

// Exit codes; docs/exit-codes.md explains each.
const (
	ExitOK     = 0
	ExitError  = 2
	ExitVerify = 3
	// ExitIndeterminate: the outcome is unknown, the command may have
	// taken effect.
	ExitIndeterminate = 4
	// ExitReview: init or activate left a harness in needs-user-review
	// (nothing written for it; its next step says what the user does).
	ExitReview   = 5
	ExitCanceled = 130
)

// UsageError is a mistake in the command line.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

// Diagnostic is the run diagnostic of a usage error after the run started.
func (e *UsageError) Diagnostic() string { return "usage" }

// Usagef is a *UsageError.
func Usagef(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

// Diagnoser is a typed error that carries its own diagnostic code.
type Diagnoser interface {
	error
	Diagnostic() string
}

// reviewer is an error saying that the command left something for the
// user to review (activation.ReviewError), which cli does not import.
type reviewer interface {
	error
	NeedsUserReview()
}

// ExitChooser is an error that picks its own exit code given the table's
// code for the error it wraps (a lifecycle hook's failure: its adapter's
// failure exit). Its diagnostic is its own.
type ExitChooser interface {
	Diagnoser
	Unwrap() error
	ExitCode(wrapped int) int
}

// errorRow is one row of the error table: the errors it matches, the exit
// code they end a command with (exit, or exitOf for an error that carries
// its own, given the table's mapping of the error it wraps), the
// diagnostic code a run records for them (docs/runs.md), and, for
// the ledger's errors that name an absolute path, the path-free message a
// hook or preflight prints instead (public).
type errorRow struct {
	match  func(error) bool
	exit   int
	exitOf func(err error) int
	code   string
	public func(error) string
}

// errorTable is the one place errors become exit codes, diagnostic codes
// and public messages, for tree-ring and tree-ring-fleet alike: the first
// matching row wins; an error no row matches exits 2 with diagnostic
// "error". Typed errors that carry their own code (a Diagnostic() string
// method: usage errors, *events.ScopeError) match the Diagnoser row; the
// rows after it name the typed errors of packages that do not know about
// runs. A function, not a table built at start-up: every process pays
// for it only when it fails.
func errorTable() []errorRow {
	return []errorRow{
		{match: is(pflag.ErrHelp), exit: ExitOK, code: "usage"},
		// A lifecycle hook's handled error exits with its adapter's
		// failure exit (adapters.StdinContract.FailureExit) instead of 2,
		// which Claude Code, Codex and Gemini CLI read from a stop hook as
		// "continue with stderr as the reason"; 4 (indeterminate) and 130
		// stay, being non-blocking for every host. Its diagnostic and
		// message are its cause's.
		{match: as[ExitChooser], exitOf: func(err error) int {
			c := target[ExitChooser](err)
			return c.ExitCode(ExitCode(c.Unwrap()))
		}},
		{match: as[*bolt.VerifyError], exit: ExitVerify, code: "verify_failed"},
		// A cancelled run is recorded aborted, without a diagnostic.
		{match: is(context.Canceled), exit: ExitCanceled, code: "error"},
		// An unknown outcome (the work may have taken effect) before any
		// other row: a retry is safe, "nothing changed" would be false.
		{match: Indeterminate, exit: ExitIndeterminate, code: "indeterminate"},
		// A harness left in needs-user-review (activation.ReviewError):
		// the report is printed, a script must still be able to tell.
		{match: as[reviewer], exit: ExitReview, code: "needs_user_review"},
		{match: as[Diagnoser], exit: ExitError},
		{match: as[*bolt.LockedError], exit: ExitError, code: "ledger_locked", public: func(err error) string {
			return fmt.Sprintf("the ledger is locked by another process (waited %s)", target[*bolt.LockedError](err).Timeout)
		}},
		{match: as[*bolt.CorruptError], exit: ExitError, code: "ledger_corrupt", public: func(err error) string {
			return fmt.Sprintf("the ledger is corrupt (run `tree-ring audit verify`): %v", UnwrapPath(target[*bolt.CorruptError](err).Err))
		}},
		{match: as[*bolt.WrongExpectedVersionError], exit: ExitError, code: "concurrent_write"},
		{match: as[*bolt.IDConflictError], exit: ExitError, code: "id_conflict"},
		{match: as[*bolt.NotFoundError], exit: ExitError, code: "no_ledger", public: func(error) string {
			return "no Tree Ring ledger under --root; run `tree-ring init` first"
		}},
		{match: as[*bolt.InvalidRootError], exit: ExitError, code: "invalid_root", public: func(err error) string {
			return "the ledger: " + target[*bolt.InvalidRootError](err).Reason
		}},
		{match: as[*strictjson.UnknownKeyError], exit: ExitError, code: "input_unknown_key"},
		{match: as[*strictjson.DuplicateKeyError], exit: ExitError, code: "input_duplicate_key"},
		{match: as[*events.UnknownTypeError], exit: ExitError, code: "input_unknown_event_type"},
		{match: as[*events.HashMismatchError], exit: ExitError, code: "input_hash_mismatch"},
		{match: is(context.DeadlineExceeded), exit: ExitError, code: "timeout"},
		{match: is(fs.ErrNotExist), exit: ExitError, code: "not_found"},
		{match: is(fs.ErrPermission), exit: ExitError, code: "permission_denied"},
		{match: as[*bolt.CommitError], exit: ExitError, code: "commit_failed"},
		{match: is(syscall.ENOSPC), exit: ExitError, code: "disk_full"},
		{match: is(syscall.EROFS), exit: ExitError, code: "read_only_fs", public: func(error) string {
			return "the file system holding the project's .tree-ring is read-only, so Tree Ring cannot record here; remount it read-write or work in a writable checkout"
		}},
	}
}

func is(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }

func as[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// target is the error of type T in err's chain (the row matched it).
func target[T error](err error) T {
	var t T
	errors.As(err, &t)
	return t
}

// rowOf is err's row of the error table (nil: none).
func rowOf(err error) *errorRow {
	rows := errorTable()
	for i := range rows {
		if rows[i].match(err) {
			return &rows[i]
		}
	}
	return nil
}

// ExitCode is the exit code of a command's error.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	if r := rowOf(err); r != nil {
		if r.exitOf != nil {
			return r.exitOf(err)
		}
		return r.exit
	}
	return ExitError
}

// Diagnostic is the bounded code a failed run records: never the error's
// text, which may carry input.
func Diagnostic(err error) string {
	r := rowOf(err)
	switch {
	case r == nil:
		return "error"
	case r.code == "":
		return target[Diagnoser](err).Diagnostic()
	}
	return r.code
}

// Pathless replaces the ledger's errors, which name absolute paths, by
// their public message, for a hook (whose stderr the host may log). The
// result still wraps err, so its exit and diagnostic codes are err's.
func Pathless(err error) error {
	for _, r := range errorTable() {
		if r.public != nil && r.match(err) {
			return &publicError{msg: r.public(err), err: err}
		}
	}
	return err
}

// publicError is an error shown by its path-free message.
type publicError struct {
	msg string
	err error
}

func (e *publicError) Error() string { return e.msg }
func (e *publicError) Unwrap() error { return e.err }

// UnwrapPath drops the path of an *fs.PathError, keeping its cause, for
// messages that must not name an absolute path.
func UnwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Indeterminate reports whether err says its outcome is unknown: a commit
// whose last sync failed after the meta page reached the ledger, a file
// whose directory sync failed after it was linked into place, a report
// that could not be written after the work was done.
func Indeterminate(err error) bool {
	var ie interface{ Indeterminate() bool }
	return errors.As(err, &ie) && ie.Indeterminate()
}
