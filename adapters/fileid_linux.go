package adapters

import (
	"os"
	"syscall"
)

// fileIdentity is a file's inode and its modification and change times in
// nanoseconds: ctime moves with every write, chmod, link and rename of the
// inode and cannot be set back by a user.
func fileIdentity(fi os.FileInfo) (inode uint64, mtimeNS, ctimeNS int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0
	}
	return st.Ino, st.Mtim.Nano(), st.Ctim.Nano()
}
