//go:build !(linux && amd64)

package sysfault

import (
	"context"
	"errors"
)

// Supported reports whether Run works on this platform.
const Supported = false

// Run needs ptrace on linux/amd64.
func Run(context.Context, Command, Plan) (*Result, error) {
	return nil, errors.New("sysfault: needs linux/amd64")
}
