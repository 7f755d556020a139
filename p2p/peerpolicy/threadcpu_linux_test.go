package peerpolicy

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// With ChargeThreadCPU, a piece of work is charged to its peer at its
// thread's CPU time: a piece that spent 60 ms off the CPU (as a piece
// preempted on a busy machine does) costs its peer next to nothing, and
// that peer is granted the next slot ahead of a peer whose piece burned
// 10 ms of CPU; charged at wall time, the first peer would go second.
// The bucket is charged the same: about 10 ms with thread CPU time, the
// 70 ms of wall time without.
func TestWorkMeterChargesThreadCPU(t *testing.T) {
	for _, tc := range []struct {
		name      string
		threadCPU bool
		wantFirst int
	}{
		{"thread CPU time", true, 0},
		{"wall time", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWorkMeter(1, 1, time.Now) // one slot, a core
			if tc.threadCPU {
				w.ChargeThreadCPU()
			}
			peers := []*WorkShare{w.NewShare(), w.NewShare()}
			pieces := []func(){
				func() { time.Sleep(60 * time.Millisecond) }, // off the CPU
				func() { // on it
					for start := time.Now(); time.Since(start) < 10*time.Millisecond; {
					}
				},
			}
			for i, piece := range pieces {
				func() {
					runtime.LockOSThread() // one thread throughout
					defer runtime.UnlockOSThread()
					done, err := w.Acquire(context.Background(), peers[i])
					if err != nil {
						t.Fatal(err)
					}
					piece()
					done()
				}()
			}
			switch spent := w.Spent(); {
			case !tc.threadCPU && spent < 70*time.Millisecond:
				t.Fatalf("the bucket was charged %v, want the 70ms of wall time", spent)
			case tc.threadCPU && (spent <= 0 || spent >= 60*time.Millisecond):
				t.Fatalf("the bucket was charged %v, want the busy piece's CPU time, not the 60ms off the CPU", spent)
			}
			if first := firstGranted(t, w, peers); first != tc.wantFirst {
				t.Fatalf("peer %d granted first, want peer %d", first, tc.wantFirst)
			}
		})
	}
}
