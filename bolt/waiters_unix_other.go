//go:build unix && !linux

package bolt

import "os"

// announce and withdraw do nothing here (waiters_other.go); flock_unix.go
// calls them around a blocking wait.
func announce(*os.File) {}
func withdraw(*os.File) {}
