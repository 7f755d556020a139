//go:build !linux

package peerpolicy

import "time"

// threadCPU cannot read a thread's CPU time here: pieces of work are
// charged to peers at their wall time.
func threadCPU() (cpu time.Duration, tid int, ok bool) { return 0, 0, false }
