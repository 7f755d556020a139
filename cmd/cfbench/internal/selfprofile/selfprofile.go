// Package selfprofile profiles cfbench's own process while it runs
// cfindexd's parts in process: its CPU time, an execution trace, heap
// profiles (at the end and at the peak) and `go tool pprof` listings.
package selfprofile

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StartTrace starts an execution trace into path when on, and returns
// what stops it (safe to call twice; a no-op when off).
func StartTrace(on bool, path string) (func(), error) {
	if !on {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("trace: %w", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			trace.Stop()
			f.Close()
		})
	}, nil
}

// WatchPeakHeap samples the live heap every 50 ms until done is closed and
// writes the heap profile to path each time it is 2 MB above the highest
// seen so far; the highest comes back on the channel.
func WatchPeakHeap(path string, done <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var peak, written int64
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := int64(sample[0].Value.Uint64()); v > peak {
				peak = v
				if peak > written+2e6 {
					if f, err := os.Create(path); err == nil {
						_ = pprof.Lookup("heap").WriteTo(f, 0)
						f.Close()
						written = peak
					}
				}
			}
			select {
			case <-done:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// WriteHeapProfile writes the heap profile to path after a collection, so
// its in-use figures are current.
func WriteHeapProfile(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	return nil
}

// SelfCPU is this process's user plus system time so far.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PprofTop runs `go tool pprof -top` on the profile, writes the whole
// listing to listing and returns its first n lines after the header.
func PprofTop(ctx context.Context, profile, listing string, n int, extra ...string) ([]string, error) {
	args := append([]string{"tool", "pprof", "-top"}, extra...)
	cmd := exec.CommandContext(ctx, "go", append(args, profile)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go tool pprof: %w\n%s", err, errOut.Bytes())
	}
	if err := os.WriteFile(listing, out.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("profile listing: %w", err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	// The listing starts with File/Type/Time/Duration lines, then
	// "Showing nodes ...", then the column header "flat  flat%  sum% ...".
	for i, l := range lines {
		if strings.Contains(l, "flat%") {
			head := lines[:i+1]
			body := lines[i+1:]
			if len(body) > n {
				body = body[:n]
			}
			return append(keepSummary(head), body...), nil
		}
	}
	return lines, nil
}

// keepSummary keeps the header lines of a pprof listing that say how much
// was sampled, dropping file and build details.
func keepSummary(head []string) []string {
	var keep []string
	for _, l := range head {
		if strings.HasPrefix(l, "Duration:") || strings.HasPrefix(l, "Showing") || strings.Contains(l, "flat%") {
			keep = append(keep, l)
		}
	}
	return keep
}
