package blockproxy

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// The gate allows max fetches, one while the indexer is busy, and serves
// waiters in order; a waiter that gives up leaves the queue.
func TestFetchGate(t *testing.T) {
	ctx := context.Background()
	var busy atomic.Bool
	g := NewGate(3, busy.Load)
	for range 3 {
		if err := g.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	order := make(chan int, 3)
	gone, cancel := context.WithCancel(ctx)
	for i := range 3 {
		c := ctx
		if i == 1 {
			c = gone
		}
		go func() {
			if g.Acquire(c) == nil {
				order <- i
			}
		}()
		waitFor(t, "waiter queued", ioTimeout, func() bool {
			g.mu.Lock()
			defer g.mu.Unlock()
			return len(g.waiters) == i+1
		})
	}
	cancel() // waiter 1 gives up
	waitFor(t, "waiter 1 left", ioTimeout, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.waiters) == 2
	})
	busy.Store(true)
	g.Release() // 2 in flight, but busy allows 1: nobody gets in
	select {
	case i := <-order:
		t.Fatalf("waiter %d admitted while busy with 2 in flight", i)
	case <-time.After(50 * time.Millisecond):
	}
	g.Release()
	g.Release() // 0 in flight: one gets in
	if i := <-order; i != 0 {
		t.Fatalf("waiter %d first, want 0", i)
	}
	busy.Store(false)
	g.Release()
	if i := <-order; i != 2 {
		t.Fatalf("waiter %d next, want 2", i)
	}
	if n := g.InFlight(); n != 1 {
		t.Fatalf("%d in flight, want 1", n)
	}
}
