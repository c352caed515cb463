package runrec

import "syscall"

// probeProcess answers as kill(pid, 0) would: ESRCH when no process pid is
// running (OpenProcess refuses an unknown pid with ERROR_INVALID_PARAMETER;
// an exited one that a handle keeps has an exit code other than
// STILL_ACTIVE), nil when it runs, any other error (access denied) as is.
func probeProcess(pid int, _ syscall.Signal) error {
	const errInvalidParameter, stillActive = syscall.Errno(87), 259
	h, err := syscall.OpenProcess(syscall.PROCESS_QUERY_INFORMATION, false, uint32(pid))
	if err == errInvalidParameter {
		return syscall.ESRCH
	}
	if err != nil {
		return err
	}
	defer syscall.CloseHandle(h)
	var code uint32
	if err := syscall.GetExitCodeProcess(h, &code); err != nil {
		return err
	}
	if code != stillActive {
		return syscall.ESRCH
	}
	return nil
}
