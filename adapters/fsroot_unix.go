//go:build unix

package adapters

import "syscall"

// dirSyncs: a directory is fsynced after an entry is made in it. On darwin
// Go's File.Sync is fcntl(F_FULLFSYNC), which also flushes the drive's
// write cache (plain fsync there does not; docs/platforms.md).
const dirSyncs = true

// oNonblock opens a fifo without waiting for a writer.
const oNonblock = syscall.O_NONBLOCK
