//go:build unix

package bolt

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// errLockWait is a lock wait that ran past Options.LockTimeout.
var errLockWait = errors.New("lock wait timed out")

// waitLock takes the ledger's file lock on f before bbolt does, blocking in
// the kernel, so that a waiting process wakes the moment the holder
// releases it. bbolt's own flock polls every 50 ms: with 32 hooks queued,
// each would otherwise sleep up to 50 ms past every release. bbolt then
// takes the same lock on the same open file description, which succeeds at
// once. exclusive selects LOCK_EX (a writer) or LOCK_SH (a reader), as
// bbolt does.
//
// A process that has to wait announces itself (announce) until it has the
// lock, so that a long operation holding it ends its slice at once.
//
// The blocking flock runs in a goroutine so that the wait is bounded by
// timeout. On a timeout the caller closes f; the abandoned goroutine's
// flock then holds the file's last reference and, when it is granted,
// returns and drops it, which releases the lock again at once.
func waitLock(f *os.File, exclusive bool, timeout time.Duration) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	fd := int(f.Fd())
	switch err := syscall.Flock(fd, how|syscall.LOCK_NB); {
	case err == nil:
		return nil
	case !errors.Is(err, syscall.EWOULDBLOCK):
		return err
	}
	announce(f)
	defer withdraw(f)
	done := make(chan error, 1)
	go func() {
		for {
			err := syscall.Flock(fd, how)
			if !errors.Is(err, syscall.EINTR) {
				done <- err
				return
			}
		}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return errLockWait
	}
}
