package adapters

import (
	"errors"
	"fmt"
	"strings"
)

// SymlinkError reports a symlink where Tree Ring needs a real directory or
// file. Tree Ring never follows one inside the project.
type SymlinkError struct{ Path string }

func (e *SymlinkError) Error() string {
	return fmt.Sprintf("%s is a symlink; Tree Ring refuses to follow it", e.Path)
}

// NotRegularError reports a final path that exists but is not a regular file
// (a directory, device, socket or fifo).
type NotRegularError struct{ Path string }

func (e *NotRegularError) Error() string { return fmt.Sprintf("%s is not a regular file", e.Path) }

// NotDirError reports a parent component that exists but is not a directory.
type NotDirError struct{ Path string }

func (e *NotDirError) Error() string { return fmt.Sprintf("%s is not a directory", e.Path) }

// ExistsError reports a final path that appeared between inspection and
// creation; nothing was written.
type ExistsError struct{ Path string }

func (e *ExistsError) Error() string { return fmt.Sprintf("%s already exists; not replaced", e.Path) }

// TooLargeError reports an existing file above the read bound.
type TooLargeError struct {
	Path  string
	Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %d bytes", e.Path, e.Limit)
}

// DurabilityError reports a failure after a final path was created (a short
// write, a file or directory fsync): the path exists but whether its bytes
// or its directory entry are durable is indeterminate. Nothing is rolled
// back, because removal cannot be conditioned on the exact inode and bytes.
type DurabilityError struct {
	Path string
	Err  error
}

func (e *DurabilityError) Error() string {
	return fmt.Sprintf("%s: publication durability is indeterminate: %v", e.Path, e.Err)
}

func (e *DurabilityError) Unwrap() error { return e.Err }

// Entry is an inspected final path.
type Entry struct {
	Exists bool
	Data   []byte
}

func splitRel(rel string) ([]string, error) {
	if err := CheckRelPath(rel); err != nil {
		return nil, err
	}
	return strings.Split(rel, "/"), nil
}

// IsRootRefusal reports the pinned root's typed refusals of a path (a
// symlink, something other than a regular file, a parent that is not a
// directory, a file over its bound): what is there is invalid rather than
// unreadable.
func IsRootRefusal(err error) bool {
	var sl *SymlinkError
	var nr *NotRegularError
	var nd *NotDirError
	var tl *TooLargeError
	return errors.As(err, &sl) || errors.As(err, &nr) || errors.As(err, &nd) || errors.As(err, &tl)
}
