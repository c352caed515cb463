package eventstest

import (
	"syscall"
	"time"
)

// CPUTime is the process's CPU time so far (kernel + user), as on Unix.
func CPUTime() time.Duration {
	var creation, exit, kernel, user syscall.Filetime
	h, err := syscall.GetCurrentProcess()
	if err != nil || syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user) != nil {
		return 0
	}
	ticks := func(t syscall.Filetime) int64 { return int64(t.HighDateTime)<<32 | int64(t.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100) // 100 ns ticks
}
