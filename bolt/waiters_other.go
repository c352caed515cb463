//go:build !linux

package bolt

import "os"

// Waiters cannot announce themselves here (no open-file-description
// locks): a slice runs to its budget, and Yield leaves the lock free for
// yieldGap.
const waitersAnnounce = false

func announce(*os.File)       {}
func withdraw(*os.File)       {}
func announced(*os.File) bool { return false }
