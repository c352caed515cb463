//go:build unix

package runrec

import "syscall"

var probeProcess = syscall.Kill
