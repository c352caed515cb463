//go:build !linux

package adapters

import (
	"errors"
	"os"
	"runtime"
)

// ProjectRoot is a pinned project directory. Descriptor-relative,
// no-follow publication is implemented for Linux only; elsewhere every
// operation fails rather than falling back to path-based writes.
type ProjectRoot struct {
	FailSync func(dir string) error
}

var errPlatform = errors.New("create-only bridge publication is not supported on " + runtime.GOOS)

// OpenProjectRoot fails on this platform.
func OpenProjectRoot(string) (*ProjectRoot, error) { return nil, errPlatform }

// Close does nothing on this platform.
func (r *ProjectRoot) Close() error { return nil }

// ReadFile fails on this platform.
func (r *ProjectRoot) ReadFile(string, int) (Entry, error) { return Entry{}, errPlatform }

// CreateFile fails on this platform.
func (r *ProjectRoot) CreateFile(string, []byte, uint32, uint32) error { return errPlatform }

// Exists fails on this platform.
func (r *ProjectRoot) Exists(string) (bool, error) { return false, errPlatform }

// ListDir fails on this platform.
func (r *ProjectRoot) ListDir(string, int) ([]string, bool, error) { return nil, false, errPlatform }

// RemoveFile fails on this platform.
func (r *ProjectRoot) RemoveFile(string) (bool, error) { return false, errPlatform }

// RemoveEmptyDir fails on this platform.
func (r *ProjectRoot) RemoveEmptyDir(string) (bool, error) { return false, errPlatform }

// OpenRead fails on this platform.
func (r *ProjectRoot) OpenRead(string) (*os.File, bool, error) { return nil, false, errPlatform }

// fileIdentity is unknown on this platform (every quick check hashes).
func fileIdentity(os.FileInfo) (uint64, int64, int64) { return 0, 0, 0 }
