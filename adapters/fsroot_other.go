//go:build !unix

package adapters

// dirSyncs: Windows cannot flush a directory handle (FlushFileBuffers needs
// write access, which a directory handle is not given); NTFS journals the
// directory entry itself (docs/platforms.md).
const dirSyncs = false

// oNonblock: Windows has no fifos in the file system to block on.
const oNonblock = 0
