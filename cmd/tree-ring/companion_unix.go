//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"syscall"
)

// execCompanion replaces this process with the companion at path (its
// stdio, environment and exit code become this process's); it returns
// only on failure.
func execCompanion(_ context.Context, path string, argv []string, _ IO) error {
	if err := syscall.Exec(path, append([]string{path}, argv...), os.Environ()); err != nil {
		return fmt.Errorf("run %s: %w", path, err)
	}
	return nil // not reached: Exec returns only on failure
}
