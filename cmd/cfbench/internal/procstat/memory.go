package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RSSSample is a process's resident set at one moment of a run.
type RSSSample struct {
	// At is the time since the process started.
	At time.Duration `json:"t_ns"`
	// RSS is the whole resident set; Anon its anonymous part (Go's heap,
	// stacks, runtime) and File its file-backed part (the binary, and the
	// store's bbolt mmap).
	RSS  int64 `json:"rss_bytes"`
	Anon int64 `json:"anon_bytes"`
	File int64 `json:"file_bytes"`
	// HWM is the kernel's peak resident set of the process so far
	// (VmHWM), which no sampling interval misses.
	HWM int64 `json:"hwm_bytes"`
}

// SampleEvery is how often a run's RSS is read.
const SampleEvery = 100 * time.Millisecond

// SampleRSS reads pid's RSS every SampleEvery from start until stop is
// closed, and returns the samples on the channel it returns.
func SampleRSS(pid int, start time.Time, stop <-chan struct{}) <-chan []RSSSample {
	out := make(chan []RSSSample, 1)
	go func() {
		var samples []RSSSample
		t := time.NewTicker(SampleEvery)
		defer t.Stop()
		for {
			if rss, anon, file, hwm, ok := RSS(pid); ok {
				samples = append(samples, RSSSample{At: time.Since(start), RSS: rss, Anon: anon, File: file, HWM: hwm})
			}
			select {
			case <-stop:
				out <- samples
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// RSSPeaks returns the largest RSS, anonymous and file-backed parts among
// samples (each its own maximum).
func RSSPeaks(samples []RSSSample) (rss, anon, file int64) {
	for _, s := range samples {
		rss, anon, file = max(rss, s.RSS), max(anon, s.Anon), max(file, s.File)
	}
	return rss, anon, file
}

// ChildPeakRSS is an exited child's peak resident set: hwm, its VmHWM read
// just before it was stopped, or rusage's figure when /proc gave none (see
// SamplesPeak for why rusage's is not the child's own).
func ChildPeakRSS(hwm int64, state *os.ProcessState) int64 {
	if hwm > 0 {
		return hwm
	}
	_, _, peak := Rusage(state)
	return peak
}

// SamplesPeak is a child's peak resident set: the last VmHWM its samples saw
// (and at least their largest RSS), or rusage's figure when /proc gave
// none. rusage's ru_maxrss alone is not the child's: Linux carries the
// peak of the address space a process had before exec into it, and Go
// starts children with vfork semantics, so a child's ru_maxrss is at
// least cfbench's own peak RSS (which, after writing a blocks directory
// of the mainnet-shaped chain, is most of a gigabyte).
func SamplesPeak(samples []RSSSample, rusagePeak int64) int64 {
	var hwm, rss int64
	for _, s := range samples {
		hwm, rss = max(hwm, s.HWM), max(rss, s.RSS)
	}
	if hwm == 0 {
		return rusagePeak
	}
	return max(hwm, rss)
}

// RSSCurve renders n evenly spaced samples (by time) in MB, for the table.
func RSSCurve(samples []RSSSample, n int) string {
	if len(samples) == 0 {
		return "n/a"
	}
	end := samples[len(samples)-1].At
	var b strings.Builder
	j := 0
	for i := 1; i <= n; i++ {
		at := end * time.Duration(i) / time.Duration(n)
		for j+1 < len(samples) && samples[j+1].At <= at {
			j++
		}
		if i > 1 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.0f", float64(samples[j].RSS)/1e6)
	}
	return b.String()
}

// GCStats summarises a run's Go garbage collections from its gctrace
// lines (GODEBUG=gctrace=1 on stderr).
type GCStats struct {
	// Cycles is the number of collections.
	Cycles int `json:"cycles"`
	// MaxLive is the largest heap left live after a collection; MaxGoal
	// the largest heap goal (where the next collection starts); MaxHeap
	// the largest heap when a collection started. Bytes, from gctrace's
	// MB figures.
	MaxLive int64 `json:"max_live_bytes"`
	MaxGoal int64 `json:"max_goal_bytes"`
	MaxHeap int64 `json:"max_heap_bytes"`
	// CPUPercent is the share of the process's CPU spent in GC at its last
	// collection (gctrace's cumulative "N%").
	CPUPercent int `json:"cpu_percent"`
}

// Add parses one stderr line; lines that are not gctrace lines are
// ignored. The format (runtime/extern.go) is
// "gc # @#s #%: ... ms clock, ... ms cpu, #->#-># MB, # MB goal, ...".
func (g *GCStats) Add(line []byte) {
	if !bytes.HasPrefix(line, []byte("gc ")) {
		return
	}
	fields := strings.Split(string(line), ", ")
	parsed := false
	for _, f := range fields {
		switch {
		case strings.HasSuffix(f, " MB goal"):
			if v, err := strconv.ParseInt(strings.TrimSuffix(f, " MB goal"), 10, 64); err == nil {
				g.MaxGoal = max(g.MaxGoal, v<<20)
			}
		case strings.HasSuffix(f, " MB") && strings.Count(f, "->") == 2:
			parts := strings.Split(strings.TrimSuffix(f, " MB"), "->")
			start, err1 := strconv.ParseInt(parts[0], 10, 64)
			live, err2 := strconv.ParseInt(parts[2], 10, 64)
			if err1 == nil && err2 == nil {
				g.MaxHeap = max(g.MaxHeap, start<<20)
				g.MaxLive = max(g.MaxLive, live<<20)
				parsed = true
			}
		}
	}
	if !parsed {
		return
	}
	g.Cycles++
	head, _, _ := strings.Cut(string(line), ":")
	if i := strings.LastIndexByte(head, ' '); i >= 0 {
		if v, err := strconv.Atoi(strings.TrimSuffix(head[i+1:], "%")); err == nil {
			g.CPUPercent = v
		}
	}
}

// Rusage returns user and system CPU time and peak RSS in bytes of an
// exited process.
func Rusage(state *os.ProcessState) (user, sys time.Duration, peakRSS int64) {
	ru, ok := state.SysUsage().(*syscall.Rusage)
	if !ok {
		return state.UserTime(), state.SystemTime(), 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), MaxRSSBytes(ru)
}
