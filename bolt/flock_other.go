//go:build !unix

package bolt

import (
	"errors"
	"os"
	"time"
)

var errLockWait = errors.New("lock wait timed out")

// waitLock leaves the lock to bbolt's own polling on other systems.
func waitLock(*os.File, bool, time.Duration) error { return nil }
