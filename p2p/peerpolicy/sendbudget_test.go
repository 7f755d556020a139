package peerpolicy

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

// takeAsync starts b.Take(n) and returns where its grant arrives.
func takeAsync(ctx context.Context, b *SendBudget, n int64) <-chan SendGrant {
	got := make(chan SendGrant, 1)
	go func() {
		g, err := b.Take(ctx, n)
		if err != nil {
			g = SendGrant{}
		}
		got <- g
	}()
	return got
}

// mustTake takes n bytes that must be granted at once (the caller knows
// nothing waits).
func mustTake(t *testing.T, b *SendBudget, n int64) SendGrant {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a take that would wait fails instead
	g, err := b.Take(ctx, n)
	if err != nil {
		t.Fatalf("take of %d: %v", n, err)
	}
	return g
}

// The pool of 1,000 for 2 peers: reserves of 250 each (at most a peer's
// own budget) and 500 shared. A peer's reserve is its own whatever the
// shared pool holds; beyond it the pool, then with an empty queue the
// overdraft.
func TestPeerBudgetReserve(t *testing.T) {
	tests := []struct {
		name string
		// others is what another peer holds of the shared pool.
		others int64
		// takes, in order, by one peer whose queue starts empty; want each
		// one's split: reserved, pooled (the rest is overdraft).
		takes []int64
		want  [][2]int64
	}{
		{"reserve first, then the pool", 0, []int64{200, 100, 300}, [][2]int64{{200, 0}, {50, 50}, {0, 300}}},
		{"the reserve while others hold the pool", 500, []int64{100, 100, 50}, [][2]int64{{100, 0}, {100, 0}, {50, 0}}},
		{"overdraft beyond the reserve when the queue is empty", 500, []int64{400}, [][2]int64{{250, 0}}},
		{"a frame over the shared pool, the queue empty", 0, []int64{900}, [][2]int64{{250, 0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pool := NewSendPool(1000, 2, 800, time.Second, stoppedClock)
			other := pool.NewBudget(800, time.Hour)
			mustTake(t, other, 250) // its reserve
			if tc.others > 0 {
				mustTake(t, other, tc.others)
			}
			if used := pool.shared.Used(); used != tc.others {
				t.Fatalf("other peer holds %d of the shared pool, want %d", used, tc.others)
			}
			b := pool.NewBudget(800, time.Hour)
			for i, n := range tc.takes {
				g := mustTake(t, b, n)
				if g.n != n || g.reserved != tc.want[i][0] || g.pooled != tc.want[i][1] {
					t.Fatalf("take %d of %d: %d reserved, %d pooled, want %v", i, n, g.reserved, g.pooled, tc.want[i])
				}
			}
			if pool.shared.Used() > pool.shared.Limit() {
				t.Fatalf("shared pool %d over its %d", pool.shared.Used(), pool.shared.Limit())
			}
		})
	}
}

// With frames queued and the reserve and pool spent, a take waits in the
// pool's line; bytes given back go to the least served waiter, and only
// as many waiters are woken as the bytes cover. A waiter whose own queue
// drains is served from its reserve, leaving the line.
func TestPeerBudgetSharedPoolLine(t *testing.T) {
	ctx := context.Background()
	pool := NewSendPool(1000, 4, 800, time.Second, stoppedClock) // reserves of 125, 500 shared
	greedy, light, holder := pool.NewBudget(800, time.Hour), pool.NewBudget(800, time.Hour), pool.NewBudget(800, time.Hour)
	// greedy has been served much more of the shared pool than light.
	gHeld := []SendGrant{mustTake(t, greedy, 125), mustTake(t, greedy, 400)}
	greedy.Give(gHeld[1])
	gHeld = gHeld[:1]
	mustTake(t, light, 125)
	mustTake(t, light, 10)
	hHeld := mustTake(t, holder, 125+490) // the rest of the shared pool
	if pool.shared.Used() != 500 {
		t.Fatalf("shared pool %d, want it spent", pool.shared.Used())
	}
	gWait := takeAsync(ctx, greedy, 100)
	testtime.WaitFor(t, "greedy in line", queueWait, func() bool { return pool.shared.Waiting() == 1 })
	lWait := takeAsync(ctx, light, 100)
	testtime.WaitFor(t, "light in line", queueWait, func() bool { return pool.shared.Waiting() == 2 })

	holder.Give(hHeld) // 490 shared come back: both fit
	for _, w := range []<-chan SendGrant{gWait, lWait} {
		select {
		case g := <-w:
			if g.pooled != 100 {
				t.Fatalf("granted %+v, want 100 pooled", g)
			}
		case <-time.After(testtime.Scale(queueWait)):
			t.Fatal("a waiter was not woken by bytes that cover it")
		}
	}
	// Now the pool holds 10+100+100; a holder takes the rest, and both
	// ask again: 100 given back covers one, the least served.
	mustTake(t, holder, 125+190)
	last := mustTake(t, holder, 100)
	gWait = takeAsync(ctx, greedy, 100)
	testtime.WaitFor(t, "greedy in line", queueWait, func() bool { return pool.shared.Waiting() == 1 })
	lWait = takeAsync(ctx, light, 100)
	testtime.WaitFor(t, "light in line", queueWait, func() bool { return pool.shared.Waiting() == 2 })
	holder.Give(last)
	select {
	case g := <-lWait:
		if g.pooled != 100 {
			t.Fatalf("light granted %+v", g)
		}
	case <-gWait:
		t.Fatal("the more served waiter was granted first")
	case <-time.After(testtime.Scale(queueWait)):
		t.Fatal("no waiter woken")
	}
	if pool.shared.Waiting() != 1 {
		t.Fatalf("%d in line, want greedy still waiting", pool.shared.Waiting())
	}
	// greedy's own queue drains (its reserve frame is written): its
	// reserve now covers the frame, and it leaves the line.
	greedy.Give(gHeld[0])
	select {
	case g := <-gWait:
		if g.reserved != 100 || g.pooled != 0 {
			t.Fatalf("greedy granted %+v, want its reserve", g)
		}
	case <-time.After(testtime.Scale(queueWait)):
		t.Fatal("a drained waiter was not served from its reserve")
	}
	if pool.shared.Waiting() != 0 {
		t.Fatalf("%d still in line", pool.shared.Waiting())
	}
}

// Many peers taking and writing at once: the reserves and the shared pool
// together never hold more than the send budget beyond one overdraft
// entry per peer with an empty queue, every take is granted (no wakeup is
// lost), and everything comes back, reserves included.
func TestSendPoolBoundUnderLoad(t *testing.T) {
	const (
		limit    = 64 << 10
		peers    = 12
		maxEntry = 6 << 10
		rounds   = 300
	)
	pool := NewSendPool(limit, peers, 16<<10, time.Second, stoppedClock)
	var charged, overdraft atomic.Int64
	var wg sync.WaitGroup
	budgets := make([]*SendBudget, peers)
	for i := range peers {
		b := pool.NewBudget(16<<10, time.Hour)
		budgets[i] = b
		queue := make(chan SendGrant, 64)
		wg.Go(func() { // the writer: writes frames one by one
			for g := range queue {
				charged.Add(-(g.reserved + g.pooled))
				overdraft.Add(-(g.n - g.reserved - g.pooled))
				b.Give(g)
			}
		})
		rng := rand.New(rand.NewPCG(uint64(i), 11))
		wg.Go(func() { // the handler: queues frames as fast as it can
			defer close(queue)
			ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(time.Minute))
			defer cancel()
			for range rounds {
				g, err := b.Take(ctx, 1+rng.Int64N(maxEntry))
				if err != nil {
					t.Errorf("take: %v (a lost wakeup?)", err)
					return
				}
				if got := charged.Add(g.reserved + g.pooled); got > limit {
					t.Errorf("%d bytes charged to reserves and pool, budget %d", got, limit)
				}
				if got := overdraft.Add(g.n - g.reserved - g.pooled); got > peers*maxEntry {
					t.Errorf("%d bytes of overdraft, at most %d", got, peers*maxEntry)
				}
				queue <- g
			}
		})
	}
	wg.Wait()
	for _, b := range budgets {
		if b.Queued() != 0 {
			t.Fatalf("a peer has %d queued after everything was written", b.Queued())
		}
		b.Close()
	}
	if pool.shared.Used() != 0 || pool.shared.Waiting() != 0 || pool.reserves.Load() != 0 {
		t.Fatalf("shared %d, %d waiting, %d reserves held after everything came back", pool.shared.Used(), pool.shared.Waiting(), pool.reserves.Load())
	}
}

// Reserves are given to at most MaxPeers peers at once (the peers of
// freed slots may outlive them); a peer without one claims it at a later
// take once one is back.
func TestSendPoolReservesBounded(t *testing.T) {
	pool := NewSendPool(1000, 2, 800, time.Second, stoppedClock)
	a, b, c := pool.NewBudget(800, time.Hour), pool.NewBudget(800, time.Hour), pool.NewBudget(800, time.Hour)
	for _, p := range []*SendBudget{a, b} {
		p.Give(mustTake(t, p, 10))
	}
	g := mustTake(t, c, 10)
	if g.reserved != 0 || g.pooled != 10 {
		t.Fatalf("third peer of two slots got %+v, want the pool only", g)
	}
	c.Give(g)
	a.Close()
	if g := mustTake(t, c, 10); g.reserved != 10 {
		t.Fatalf("after a reserve came back: %+v, want it reserved", g)
	}
}

// A handler waiting on a queue that never drains fails after the stall
// timeout; a queue that drains, however slowly, restarts the clock.
func TestPeerBudgetStall(t *testing.T) {
	ctx := context.Background()
	const stall = 500 * time.Millisecond
	pool := NewSendPool(1<<20, 125, 100, time.Second, stoppedClock)
	p := pool.NewBudget(100, stall)
	g, _ := p.Take(ctx, 100)
	start := time.Now()
	if _, err := p.Take(ctx, 100); !errors.Is(err, ErrSendStalled) {
		t.Fatalf("take on a stuck queue: %v", err)
	}
	if d := time.Since(start); d < stall {
		t.Fatalf("stalled after %v, timeout %v", d, stall)
	}

	// Frames of 10 bytes drain one every stall/10: the waiter must not
	// stall, although it waits for all ten to drain.
	p.Give(g)
	var held []SendGrant
	for range 10 {
		g, _ := p.Take(ctx, 10)
		held = append(held, g)
	}
	go func() {
		for _, g := range held {
			time.Sleep(stall / 10)
			p.Give(g)
		}
	}()
	if _, err := p.Take(ctx, 100); err != nil {
		t.Fatalf("take on a slowly draining queue: %v", err)
	}
	// The context ends a wait too.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Take(cctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("take with a cancelled context: %v", err)
	}
}
