//go:build unix

package eventstest

import (
	"syscall"
	"time"
)

// CPUTime is the process's CPU time so far (user + system), the steadier
// figure on a shared machine.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
