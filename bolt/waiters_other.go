//go:build !linux

package bolt

import "os"

// lockWaiters cannot see waiting processes here; Yield then leaves the
// lock free for yieldGap.
func lockWaiters(os.FileInfo) bool { return false }
