// Package testtime gives tests deadlines that hold on a slow or busy
// machine. A test waits on a condition, never sleeps for a fixed time, and
// its deadline is a bound on a failure, not a measurement: Scale stretches
// it by the factor in CFINDEXD_TEST_TIMESCALE (default 1) and by the
// machine's load, so a 2-core box running other builds fails a test only
// when the condition really never holds.
package testtime

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// EnvScale names the environment variable with an extra factor for every
// deadline (a positive decimal, e.g. 3 for a very slow machine).
const EnvScale = "CFINDEXD_TEST_TIMESCALE"

// maxLoadFactor caps the factor taken from the load average, so a runaway
// load cannot turn a hung test into an hour-long one.
const maxLoadFactor = 4

// Scale returns d stretched for this machine: times the factor in
// CFINDEXD_TEST_TIMESCALE, and times the one-minute load average per CPU
// when that is above 1 (Linux only; at most maxLoadFactor).
func Scale(d time.Duration) time.Duration {
	f := envFactor() * loadFactor()
	return time.Duration(float64(d) * f)
}

func envFactor() float64 {
	v, err := strconv.ParseFloat(strings.TrimSpace(os.Getenv(EnvScale)), 64)
	if err != nil || v <= 0 {
		return 1
	}
	return v
}

// loadFactor is the one-minute load average divided by the number of CPUs,
// between 1 and maxLoadFactor; 1 where /proc/loadavg cannot be read.
func loadFactor() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 1
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 1
	}
	load, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return 1
	}
	return min(max(load/float64(runtime.NumCPU()), 1), maxLoadFactor)
}

// WaitFor checks cond every 5 ms until it holds, and fails tb if it does
// not within Scale(limit). what names the condition in the failure.
func WaitFor(tb testing.TB, what string, limit time.Duration, cond func() bool) {
	tb.Helper()
	if !Poll(limit, cond) {
		tb.Fatalf("%s: not within %v", what, Scale(limit))
	}
}

// Poll checks cond every 5 ms until it holds (true) or Scale(limit) passes
// (false, after one last check).
func Poll(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(Scale(limit))
	for !cond() {
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}
