//go:build unix

package main

import (
	"syscall"
	"time"
)

// cpuNow is the process's CPU time so far (user + system), the steadier
// figure on a shared machine.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
