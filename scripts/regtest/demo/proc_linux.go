package main

import "syscall"

// childProcAttr makes the kernel send SIGTERM to a child when the demo dies
// without cleaning up (say, SIGKILL), so no process outlives it for long,
// and puts the child in its own process group, so that Ctrl-C reaches only
// the demo, which then stops its children in order.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
}
