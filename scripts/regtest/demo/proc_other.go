//go:build !linux

package main

import "syscall"

// childProcAttr sets nothing outside Linux, which has no parent-death
// signal; `stop` ends what a killed demo left behind.
func childProcAttr() *syscall.SysProcAttr { return nil }
