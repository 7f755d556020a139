//go:build !linux

package procstat

import (
	"syscall"
	"time"
)

// ChildProcAttr has no parent-death signal outside Linux.
func ChildProcAttr() *syscall.SysProcAttr { return nil }

// MaxRSSBytes: BSDs and macOS differ in Maxrss units; report nothing rather
// than a wrong number.
func MaxRSSBytes(*syscall.Rusage) int64 { return 0 }

// CPU needs /proc; 0 elsewhere.
func CPU(int) time.Duration { return 0 }

// PeakRSS needs /proc; 0 elsewhere.
func PeakRSS(int) int64 { return 0 }

// TCPActiveOpens needs /proc; -1 elsewhere.
func TCPActiveOpens() int64 { return -1 }

// LoadAverage needs /proc; "" elsewhere.
func LoadAverage() string { return "" }

// RSS needs /proc; ok is false elsewhere.
func RSS(int) (rss, anon, file, hwm int64, ok bool) { return 0, 0, 0, 0, false }

// RaiseNoFile is Linux-only here (cfbench hostile needs Linux); it
// returns the usual default soft limit.
func RaiseNoFile() uint64 { return 1024 }
