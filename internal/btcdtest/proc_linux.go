package btcdtest

import "syscall"

// sysProcAttr makes the kernel kill btcd if the test process dies without
// running its cleanups (for example on a test timeout panic).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
