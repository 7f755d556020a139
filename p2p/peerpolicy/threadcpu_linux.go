package peerpolicy

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the calling OS thread's CPU time and the thread's id;
// ok is false when it cannot be read.
func threadCPU() (cpu time.Duration, tid int, ok bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, 0, false
	}
	return time.Duration(ts.Nano()), unix.Gettid(), true
}
