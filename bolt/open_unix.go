//go:build unix

package bolt

import (
	"fmt"
	"os"
	"syscall"
)

// openNoFollow opens the ledger file without following a final symlink:
// the kernel refuses one with ELOOP.
func openNoFollow(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
}

// syncDir fsyncs directory dir, making a new entry in it durable. On
// darwin Go's File.Sync is fcntl(F_FULLFSYNC), which also flushes the
// drive's cache (docs/platforms.md).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %s", dir, cause(err))
	}
	return nil
}
