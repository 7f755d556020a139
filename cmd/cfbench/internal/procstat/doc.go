// Package procstat measures processes for cmd/cfbench: a process's CPU
// time and resident set (whole, anonymous and file-backed, and the
// kernel's peak) sampled from /proc while it runs, an exited child's
// rusage, the runtime's gctrace lines summed, and the machine's load
// average and TCP connection count. Elsewhere than Linux the readings are
// zero (or absent), never an error.
//
// A child's peak RSS is its VmHWM, not rusage's ru_maxrss: Linux carries a
// parent's peak into a child it forks and execs, so ru_maxrss of a small
// daemon started by a large benchmark is the benchmark's.
//
// It imports only the standard library.
package procstat
