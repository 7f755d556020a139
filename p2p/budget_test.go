package p2p

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A peer queues up to its own budget while the pool lasts; with its queue
// empty it may always queue one frame, whatever the pool holds; with
// frames queued and the pool spent it waits, and goes on when its queue
// drains.
func TestPeerBudgetAndPool(t *testing.T) {
	ctx := context.Background()
	pool := newSendPool(1000)
	a := newPeerBudget(pool, 800, time.Hour)
	b := newPeerBudget(pool, 800, time.Hour)

	ga1, err := a.take(ctx, 500)
	if err != nil || !ga1.pooled {
		t.Fatalf("first frame: %v pooled %v", err, ga1.pooled)
	}
	ga2, err := a.take(ctx, 300)
	if err != nil || !ga2.pooled || pool.Used() != 800 {
		t.Fatalf("second frame: %v, pool %d", err, pool.Used())
	}
	// b's queue is empty: one frame goes through on overdraft, even a
	// frame larger than its budget.
	gb1, err := b.take(ctx, 900)
	if err != nil || gb1.pooled {
		t.Fatalf("overdraft frame: %v pooled %v", err, gb1.pooled)
	}
	// b has a frame queued and the pool has 200 left: 300 must wait.
	got := make(chan sendGrant, 1)
	go func() {
		g, err := b.take(ctx, 300)
		if err != nil {
			t.Error(err)
		}
		got <- g
	}()
	select {
	case <-got:
		t.Fatal("frame queued beyond the pool while the peer had frames queued")
	case <-time.After(50 * time.Millisecond):
	}
	// b's own queue drains: its queue is empty, so the frame goes.
	b.give(gb1)
	select {
	case g := <-got:
		b.give(g)
	case <-time.After(ioTimeout):
		t.Fatal("frame not queued after the peer's queue drained")
	}
	a.give(ga1)
	a.give(ga2)
	if pool.Used() != 0 || a.Queued() != 0 || b.Queued() != 0 {
		t.Fatalf("pool %d, queues %d %d after everything was written", pool.Used(), a.Queued(), b.Queued())
	}
}

// A handler waiting on a queue that never drains fails after the stall
// timeout; a queue that drains, however slowly, restarts the clock.
func TestPeerBudgetStall(t *testing.T) {
	ctx := context.Background()
	const stall = 500 * time.Millisecond
	pool := newSendPool(1 << 20)
	p := newPeerBudget(pool, 100, stall)
	g, _ := p.take(ctx, 100)
	start := time.Now()
	if _, err := p.take(ctx, 100); !errors.Is(err, errSendStalled) {
		t.Fatalf("take on a stuck queue: %v", err)
	}
	if d := time.Since(start); d < stall {
		t.Fatalf("stalled after %v, timeout %v", d, stall)
	}

	// Frames of 10 bytes drain one every stall/10: the waiter must not
	// stall, although it waits for all ten to drain.
	p.give(g)
	var held []sendGrant
	for range 10 {
		g, _ := p.take(ctx, 10)
		held = append(held, g)
	}
	go func() {
		for _, g := range held {
			time.Sleep(stall / 10)
			p.give(g)
		}
	}()
	if _, err := p.take(ctx, 100); err != nil {
		t.Fatalf("take on a slowly draining queue: %v", err)
	}
	// The context ends a wait too.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.take(cctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("take with a cancelled context: %v", err)
	}
}
