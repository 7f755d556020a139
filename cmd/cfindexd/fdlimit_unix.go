//go:build unix

package main

import "syscall"

// checkFDLimit applies fdBudget to the process's open file limit (the Go
// runtime has already raised the soft limit to the hard one).
func checkFDLimit(cfg Config) error {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return nil // cannot tell; the caps still bound what clients take
	}
	return fdBudget(cfg, rl.Cur)
}
