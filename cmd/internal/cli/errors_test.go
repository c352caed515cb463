package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/tree-ring/tree-ring/bolt"
)

// chooser is an error that picks exit 1 where its cause would exit 2, as
// a lifecycle hook's failure does.
type chooser struct{ err error }

func (e *chooser) Error() string      { return e.err.Error() }
func (e *chooser) Unwrap() error      { return e.err }
func (e *chooser) Diagnostic() string { return Diagnostic(e.err) }
func (e *chooser) ExitCode(wrapped int) int {
	if wrapped != ExitError {
		return wrapped
	}
	return 1
}

// reviewed is an error that left a harness for the user to review, as
// activation.ReviewError does.
type reviewed struct{}

func (reviewed) Error() string    { return "codex needs user review" }
func (reviewed) NeedsUserReview() {}

// One table for both programs: each error's exit and diagnostic code.
func TestErrorTable(t *testing.T) {
	if got := ExitCode(nil); got != ExitOK {
		t.Errorf("nil: exit %d", got)
	}
	missing := &CompanionMissingError{Companion: Fleet, Command: "fleet publish", Beside: "/opt/tr/bin", Version: "v1.2.3"}
	for _, tc := range []struct {
		err        error
		exit       int
		diagnostic string
	}{
		{errors.New("plain"), ExitError, "error"},
		{Usagef("--nats URL is required"), ExitError, "usage"},
		{fmt.Errorf("fleet publish: %w", missing), ExitError, "companion_missing"},
		{&bolt.VerifyError{Detail: "x"}, ExitVerify, "verify_failed"},
		{fmt.Errorf("wait: %w", context.Canceled), ExitCanceled, "error"},
		{&OutputError{Err: errors.New("eio")}, ExitIndeterminate, "indeterminate"},
		{&chooser{&bolt.LockedError{}}, 1, "ledger_locked"},
		{&chooser{&OutputError{Err: errors.New("eio")}}, ExitIndeterminate, "indeterminate"},
		{&LedgerMissingError{Path: "/p/.tree-ring/ledger.db"}, ExitError, "ledger_missing"},
		{fmt.Errorf("init: %w", reviewed{}), ExitReview, "needs_user_review"},
		{&fs.PathError{Op: "open", Path: "/p/.tree-ring/ledger.db", Err: syscall.EROFS}, ExitError, "read_only_fs"},
	} {
		if got := ExitCode(tc.err); got != tc.exit {
			t.Errorf("%v: exit %d, want %d", tc.err, got, tc.exit)
		}
		if got := Diagnostic(tc.err); got != tc.diagnostic {
			t.Errorf("%v: diagnostic %q, want %q", tc.err, got, tc.diagnostic)
		}
	}
	for _, want := range []string{
		"fleet publish needs the companion program tree-ring-fleet, which is neither beside tree-ring in /opt/tr/bin nor on PATH; nothing was done",
		"`go install github.com/tree-ring/tree-ring/cmd/tree-ring-fleet@v1.2.3`",
		"`go build -o /opt/tr/bin/tree-ring-fleet ./cmd/tree-ring-fleet`",
	} {
		if !strings.Contains(missing.Error(), want) {
			t.Errorf("%q lacks %q", missing.Error(), want)
		}
	}
	missing.Beside, missing.Version = "", ""
	if got := missing.Error(); !strings.Contains(got, "which is not on PATH") || !strings.Contains(got, "@latest`") || strings.Contains(got, "go build") {
		t.Errorf("without a directory or version: %q", got)
	}
}

// Issue 24 finding 10: a read-only file system is named as such, in the
// hook's path-free message too, never "the ledger is corrupt".
func TestReadOnlyFileSystemIsNamed(t *testing.T) {
	err := fmt.Errorf("open ledger %s: %w", "/p/.tree-ring/ledger.db", &fs.PathError{Op: "open", Path: "/p/.tree-ring/ledger.db", Err: syscall.EROFS})
	msg := Pathless(err).Error()
	if !strings.Contains(msg, "read-only") || strings.Contains(msg, "corrupt") || strings.Contains(msg, "/p/") {
		t.Fatalf("public message %q", msg)
	}
	if !strings.Contains(err.Error(), "read-only file system") {
		t.Fatalf("init's error %q does not name the read-only file system", err)
	}
}
