package bolt

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// lockWaiters reports whether a process is blocked in flock on the file
// described by fi: Linux lists each blocked request in /proc/locks as a
// line with "->", naming the file as major:minor:inode. A read error or an
// unknown format reads as no waiter.
func lockWaiters(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false
	}
	ino := []byte(":" + strconv.FormatUint(st.Ino, 10) + " ")
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		if bytes.Contains(line, []byte("->")) && bytes.Contains(line, []byte("FLOCK")) && bytes.Contains(line, ino) {
			return true
		}
	}
	return false
}
