//go:build !linux

package main

import (
	"syscall"
	"time"
)

// childProcAttr has no parent-death signal outside Linux.
func childProcAttr() *syscall.SysProcAttr { return nil }

// maxRSSBytes: BSDs and macOS differ in Maxrss units; report nothing rather
// than a wrong number.
func maxRSSBytes(*syscall.Rusage) int64 { return 0 }

// processCPU needs /proc; 0 elsewhere.
func processCPU(int) time.Duration { return 0 }

// processPeakRSS needs /proc; 0 elsewhere.
func processPeakRSS(int) int64 { return 0 }

// tcpActiveOpens needs /proc; -1 elsewhere.
func tcpActiveOpens() int64 { return -1 }

// loadAverage needs /proc; "" elsewhere.
func loadAverage() string { return "" }

// processRSS needs /proc; ok is false elsewhere.
func processRSS(int) (rss, anon, file, hwm int64, ok bool) { return 0, 0, 0, 0, false }
