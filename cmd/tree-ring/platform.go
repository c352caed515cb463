package main

import (
	"fmt"
	"runtime"
)

// platformError is a command this system cannot honour (docs/platforms.md):
// one line naming what is missing, instead of a half-working run.
type platformError struct{ command, goos, what string }

func (e *platformError) Error() string {
	return fmt.Sprintf("%s is not supported on %s: %s (docs/platforms.md)", e.command, e.goos, e.what)
}

// Diagnostic is the code (cmd's diagnostic column).
func (e *platformError) Diagnostic() string { return "unsupported_platform" }

// refusePlatform is the platformError for command on this system, nil
// where it runs (unsupported, per system, in platform_*.go).
func refusePlatform(command string) error {
	if what, ok := unsupported[command]; ok {
		return &platformError{command: command, goos: runtime.GOOS, what: what}
	}
	return nil
}
