//go:build !unix

package bolt

import (
	"fmt"
	"os"
	"syscall"
)

// openNoFollow opens the ledger file and refuses a symlink, which this
// system's open cannot be told not to follow: the name is inspected before
// the open and again after it, and a symlink at either moment, or a file
// other than the one opened, is ELOOP (as on Unix).
func openNoFollow(name string, flag int, perm os.FileMode) (*os.File, error) {
	if fi, err := os.Lstat(name); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ELOOP}
	}
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	opened, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	named, err := os.Lstat(name)
	if err != nil || !os.SameFile(opened, named) {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ELOOP}
	}
	return f, nil
}

// syncDir does nothing here: Windows cannot flush a directory handle
// (FlushFileBuffers needs write access, which a directory handle is not
// given); NTFS journals the directory entry itself (docs/platforms.md).
func syncDir(dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	return nil
}
