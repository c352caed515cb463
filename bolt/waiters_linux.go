package bolt

import (
	"os"
	"syscall"
)

// A process that finds the ledger's flock busy announces itself by taking
// a read lock on one byte of the ledger file far past its end (an
// open-file-description lock: bbolt uses flock only, the two kinds never
// interact, and nothing is ever written there) and drops it once it has
// the flock. The holder of a long operation probes that byte with one
// non-blocking fcntl every few items of a slice and ends the slice at once
// when it is taken. The kernel drops the announcement with the file
// description, so a waiter killed while waiting leaves none behind.
const announceByte = 1 << 62

// The F_OFD_* commands (Linux 3.15), the same on every architecture; the
// syscall package does not name them.
const (
	fOFDGetlk = 36
	fOFDSetlk = 37
)

func announceRange(typ int16) *syscall.Flock_t {
	return &syscall.Flock_t{Type: typ, Whence: 0, Start: announceByte, Len: 1}
}

// announce marks f's process as waiting for the ledger lock. A failure
// (a kernel without OFD locks) only means the holder will not see it
// before its slice budget runs out.
func announce(f *os.File) { _ = syscall.FcntlFlock(f.Fd(), fOFDSetlk, announceRange(syscall.F_RDLCK)) }

// withdraw drops f's announcement.
func withdraw(f *os.File) { _ = syscall.FcntlFlock(f.Fd(), fOFDSetlk, announceRange(syscall.F_UNLCK)) }

// announced reports whether some other open file description of the
// ledger announced a waiter (probe is any descriptor of the ledger file:
// its own announcement, if any, does not count). An error reads as none.
func announced(probe *os.File) bool {
	lk := announceRange(syscall.F_WRLCK)
	if err := syscall.FcntlFlock(probe.Fd(), fOFDGetlk, lk); err != nil {
		return false
	}
	return lk.Type != syscall.F_UNLCK
}

// waitersAnnounce: a slice learns of a waiter at once (see committed).
const waitersAnnounce = true
