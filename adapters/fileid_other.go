//go:build !linux && !darwin

package adapters

import "os"

// fileIdentity is unknown here (no inode and change time in os.FileInfo):
// every quick check of the installed program hashes it.
func fileIdentity(os.FileInfo) (uint64, int64, int64) { return 0, 0, 0 }
