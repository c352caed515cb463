//go:build !unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// execCompanion runs the companion at path as a child with this process's
// stdio and environment and reports its exit code (Windows cannot replace
// a process image).
func execCompanion(ctx context.Context, path string, argv []string, stdio IO) error {
	c := exec.CommandContext(ctx, path, argv...)
	c.Stdin, c.Stdout, c.Stderr, c.Env = stdio.Stdin, stdio.Stdout, stdio.Stderr, os.Environ()
	err := c.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return &companionRan{code: 0}
	case errors.As(err, &exit):
		return &companionRan{code: exit.ExitCode()}
	}
	return fmt.Errorf("run %s: %w", path, err)
}
