package bolt

import (
	"errors"
	"fmt"
	"time"
)

// WrongExpectedVersionError is returned by Append when the stream is not at
// the version the caller expected. Nothing was appended.
type WrongExpectedVersionError struct {
	Stream   string
	Expected int64
	Actual   uint64
}

func (e *WrongExpectedVersionError) Error() string {
	return fmt.Sprintf("append %s: wrong expected version: expected %d, stream is at %d", e.Stream, e.Expected, e.Actual)
}

// IDConflictError is returned when an event id already exists in the ledger
// with different content. Nothing was appended.
type IDConflictError struct {
	ID       string
	Position uint64
}

func (e *IDConflictError) Error() string {
	return fmt.Sprintf("event id %s already exists at position %d with different content", e.ID, e.Position)
}

// InputConflictError is an import whose input holds one id twice with
// different content; First is the index of the earlier envelope.
type InputConflictError struct {
	ID    string
	First int
}

func (e *InputConflictError) Error() string {
	return fmt.Sprintf("event id %s appears earlier in the input (event %d) with different content", e.ID, e.First)
}

// BatchConflictError is returned by Append for a batch that cannot be a
// faithful retry: only some of its ids are already in the ledger, or an id
// appears twice in it. Nothing was appended.
type BatchConflictError struct {
	Stream string
	ID     string
	Reason string
}

func (e *BatchConflictError) Error() string {
	return fmt.Sprintf("append %s: event %s %s", e.Stream, e.ID, e.Reason)
}

// LockedError is returned by Open when another process holds the ledger
// past the lock timeout.
type LockedError struct {
	Path    string
	Timeout time.Duration
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("%s: ledger is locked by another process (waited %s)", e.Path, e.Timeout)
}

// NotFoundError is returned by a read-only Open when there is no ledger.
type NotFoundError struct{ Path string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s: no ledger here (run `tree-ring init` or `tree-ring events import` first)", e.Path)
}

// InvalidRootError reports a root or ledger path that is not what it must
// be: a symlink, a file where a directory belongs, a non-regular file.
type InvalidRootError struct {
	Path   string
	Reason string
}

func (e *InvalidRootError) Error() string { return fmt.Sprintf("%s: %s", e.Path, e.Reason) }

// CorruptError reports a ledger file that bbolt cannot read, or an invariant
// that does not hold.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string { return fmt.Sprintf("%s: ledger is corrupt: %v", e.Path, e.Err) }
func (e *CorruptError) Unwrap() error { return e.Err }

// VerifyError names the first thing `audit verify` found wrong.
type VerifyError struct {
	Position   uint64 // 0 when not tied to one event
	Projection string // set when a projection differs
	Detail     string
}

func (e *VerifyError) Error() string {
	switch {
	case e.Projection != "":
		return fmt.Sprintf("projection %s differs from a re-fold of the ledger: %s", e.Projection, e.Detail)
	case e.Position != 0:
		return fmt.Sprintf("position %d: %s", e.Position, e.Detail)
	default:
		return e.Detail
	}
}

// FormatMigrationError is an open of a ledger in format 1 (one index key
// per event) without Options.Migrate: reading format-1 indexes as format 2
// would read wrong data, and migrating would leave the project's installed
// program (an older build, which the hooks run) unable to read its ledger.
// `tree-ring init` migrates it and installs this build's program.
type FormatMigrationError struct {
	Path  string
	Found string // the ledger's meta.format
}

func (e *FormatMigrationError) Error() string {
	return fmt.Sprintf("%s: %s: run `tree-ring init` with this build, which migrates its indexes and upgrades the installed program (move an older .tree-ring/bin/tree-ring aside first when init asks), then retry", e.Path, e.Layout())
}

// Layout is what the ledger holds, without the step that migrates it (a
// fleet replica has its own step).
func (e *FormatMigrationError) Layout() string {
	return fmt.Sprintf("the ledger is in format %s and this build reads format %s", e.Found, FormatVersion)
}

// Diagnostic is the error's code in the command's JSON diagnostics.
func (e *FormatMigrationError) Diagnostic() string { return "ledger_format_migration" }

// ProjectionMigrationError is an open, without Options.Migrate, of a
// ledger holding a projection at another layout than this build folds
// (Found 0: never folded, a projection new in this build): only a refold
// from the first event brings it to this layout, which belongs to the
// explicit upgrade (`tree-ring init`) or `tree-ring projections rebuild`,
// never to a hook's open. Nothing was changed.
type ProjectionMigrationError struct {
	Path       string
	Projection string
	Found      int
	Want       int
}

func (e *ProjectionMigrationError) Error() string {
	return fmt.Sprintf("%s: %s: run `tree-ring init` with this build, which migrates it and upgrades the installed program (move an older .tree-ring/bin/tree-ring aside first when init asks), then retry", e.Path, e.Layout())
}

// Layout is what the ledger holds, without the step that migrates it (a
// fleet replica has its own step).
func (e *ProjectionMigrationError) Layout() string {
	return fmt.Sprintf("projection %s is stored at layout %d and this build folds layout %d", e.Projection, e.Found, e.Want)
}

// Diagnostic is the error's code in the command's JSON diagnostics.
func (e *ProjectionMigrationError) Diagnostic() string { return "projection_migration" }

// NeedsMigration reports whether err refuses an open until `tree-ring
// init` migrates the ledger (*FormatMigrationError,
// *ProjectionMigrationError).
func NeedsMigration(err error) bool {
	_, ok := MigrationLayout(err)
	return ok
}

// MigrationLayout is the Layout of the migration err refuses an open for,
// if it is one.
func MigrationLayout(err error) (string, bool) {
	var fe *FormatMigrationError
	var pe *ProjectionMigrationError
	switch {
	case errors.As(err, &fe):
		return fe.Layout(), true
	case errors.As(err, &pe):
		return pe.Layout(), true
	}
	return "", false
}
