package adapters

import (
	"os"
	"syscall"
)

// fileIdentity is a file's inode and its modification and change times in
// nanoseconds, as on Linux (the fields are named differently).
func fileIdentity(fi os.FileInfo) (inode uint64, mtimeNS, ctimeNS int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0
	}
	return st.Ino, st.Mtimespec.Nano(), st.Ctimespec.Nano()
}
