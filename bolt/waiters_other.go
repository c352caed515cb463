//go:build !linux

package bolt

import "os"

// Waiters cannot announce themselves here (no open-file-description
// locks; docs/platforms.md): a slice runs to its budget, and Yield leaves
// the lock free for yieldGap.
const waitersAnnounce = false

func announced(*os.File) bool { return false }
