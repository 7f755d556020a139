package peerpolicy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

const queueWait = 10 * time.Second

// acquireAsync starts share.Acquire and returns where its result arrives.
func acquireAsync(ctx context.Context, s *Share) <-chan error {
	done := make(chan error, 1)
	go func() { done <- s.Acquire(ctx) }()
	return done
}

// queued starts one acquire per share, in order, each waiting in the
// queue before the next starts (so arrival order is the order given).
func queued(t *testing.T, q *FairQueue, shares ...*Share) []<-chan error {
	t.Helper()
	var out []<-chan error
	for _, s := range shares {
		n := q.Waiting()
		out = append(out, acquireAsync(context.Background(), s))
		testtime.WaitFor(t, "the share to queue", queueWait, func() bool { return q.Waiting() == n+1 })
	}
	return out
}

// next releases holder's slot (charging cost) and returns which of waits
// got it; exactly one may, the queue having one slot.
func next(t *testing.T, holder *Share, cost float64, waits []<-chan error) int {
	t.Helper()
	holder.Release(cost)
	deadline := time.After(testtime.Scale(queueWait))
	for {
		for i, w := range waits {
			select {
			case err := <-w:
				if err != nil {
					t.Fatalf("waiter %d: %v", i, err)
				}
				return i
			default:
			}
		}
		select {
		case <-deadline:
			t.Fatal("no waiter got the released slot")
		case <-time.After(time.Millisecond):
		}
	}
}

// The grant order: with greedy peers queued (each served often), a light
// peer that arrives last is granted first; then the greedy peers in the
// order of their service, least first, ties in arrival order.
func TestFairQueueGrantOrder(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	q := NewFairQueue(1, time.Second, WallClock(clk.Now))
	greedy := []*Share{q.NewShare(), q.NewShare(), q.NewShare()}
	light := q.NewShare()
	// The light peer was served once, long ago; the greedy peers pulled
	// 30, 20 and 10 chunks of 16 KiB just now.
	for _, s := range append([]*Share{light}, greedy...) {
		if err := s.Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
		s.Release(16 << 10)
		if s == light {
			clk.advance(5 * time.Second)
		}
	}
	for i, s := range greedy {
		s.Charge(float64((2 - i) * 10 * 16 << 10))
	}
	holder := q.NewShare()
	if err := holder.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	waits := queued(t, q, greedy[0], greedy[1], greedy[2], light)
	names := []string{"greedy 0 (30 chunks)", "greedy 1 (20 chunks)", "greedy 2 (10 chunks)", "light"}
	want := []int{3, 2, 1, 0}
	shares := []*Share{greedy[0], greedy[1], greedy[2], light}
	for _, w := range want {
		got := next(t, holder, 16<<10, waits)
		if got != w {
			t.Fatalf("granted %s, want %s", names[got], names[w])
		}
		waits[got] = nil
		holder = shares[got]
	}
	holder.Release(0)
}

// Greedy peers that ask again as soon as they are served share the slot
// equally, whatever their chunk sizes (the cost they report), and a light
// peer asking now and then is granted at its first release every time.
func TestFairQueueSharesEqually(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	q := NewFairQueue(1, time.Second, WallClock(clk.Now))
	costs := []float64{1 << 10, 16 << 10, 64 << 10}
	var greedy []*Share
	for range costs {
		greedy = append(greedy, q.NewShare())
	}
	light := q.NewShare()
	// Every greedy peer waits; the one granted runs, the clock moves by
	// its cost (1 ns a byte: the work takes time in proportion), it
	// releases and queues again at once.
	waits := make([]<-chan error, len(greedy)+1)
	holder := q.NewShare()
	if err := holder.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	shares := append(append([]*Share{}, greedy...), light)
	for i, s := range greedy {
		waits[i] = queued(t, q, s)[0]
	}
	served := make([]float64, len(costs))
	lightServed := 0
	cost := 0.0
	for round := range 1200 {
		if round%300 == 150 {
			waits[len(greedy)] = queued(t, q, light)[0]
		}
		i := next(t, holder, cost, waits)
		waits[i] = nil
		holder = shares[i]
		if lightQueued := waits[len(greedy)] != nil || i == len(greedy); lightQueued && i != len(greedy) {
			t.Fatalf("round %d: greedy peer %d granted while the light peer waited", round, i)
		}
		if i == len(greedy) {
			lightServed++
			cost = 16 << 10
			continue
		}
		cost = costs[i]
		served[i] += cost
		clk.advance(time.Duration(cost))
		n := q.Waiting()
		waits[i] = acquireAsync(context.Background(), shares[i])
		testtime.WaitFor(t, "the greedy peer to queue again", queueWait, func() bool { return q.Waiting() == n+1 })
	}
	holder.Release(cost)
	if lightServed != 4 {
		t.Fatalf("light peer served %d times of 4", lightServed)
	}
	lo, hi := served[0], served[0]
	for _, b := range served {
		lo, hi = min(lo, b), max(hi, b)
	}
	t.Logf("bytes served per greedy peer: %.0f", served)
	if hi > 1.1*lo {
		t.Fatalf("greedy peers served %v bytes: not equal shares", served)
	}
}

// A peer that reconnects starts at the service of the peer served last,
// not at zero: it gains no place ahead of peers already waiting.
func TestFairQueueNewShareGainsNothing(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	q := NewFairQueue(1, time.Second, WallClock(clk.Now))
	a, b := q.NewShare(), q.NewShare()
	for _, s := range []*Share{a, b} {
		if err := s.Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
		s.Release(1 << 20)
	}
	holder := q.NewShare()
	if err := holder.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	fresh := q.NewShare()
	waits := queued(t, q, a, fresh)
	if got := next(t, holder, 0, waits); got != 0 {
		t.Fatal("a reconnected peer was granted ahead of a peer as served as it, queued before it")
	}
	a.Release(0)
	if err := <-waits[1]; err != nil {
		t.Fatal(err)
	}
	fresh.Release(0)
}

// A share has at most one entry in the queue: its other goroutines wait
// outside it, and each gets the slot in turn.
func TestFairQueueOneEntryPerShare(t *testing.T) {
	q := NewFairQueue(1, time.Second, WallClock(time.Now))
	holder, peer := q.NewShare(), q.NewShare()
	if err := holder.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := 0
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := peer.Acquire(context.Background()); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got++
			mu.Unlock()
			peer.Release(1)
		}()
	}
	testtime.WaitFor(t, "the peer to queue", queueWait, func() bool { return q.Waiting() == 1 })
	for range 100 {
		if n := q.Waiting(); n != 1 {
			t.Fatalf("%d entries waiting for one peer", n)
		}
	}
	holder.Release(0)
	wg.Wait()
	if got != 5 {
		t.Fatalf("%d of 5 acquires served", got)
	}
}

// Cancelling: a waiter whose context ends leaves the queue with its error
// and holds nothing; cancels racing grants pass the slot on, so that after
// any mix of cancels every slot is free again.
func TestFairQueueCancelLeaksNoSlot(t *testing.T) {
	const slots = 2
	q := NewFairQueue(slots, time.Second, WallClock(time.Now))
	ctx, cancel := context.WithCancel(context.Background())
	held := []*Share{q.NewShare(), q.NewShare()}
	for _, s := range held {
		if err := s.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	leaver := q.NewShare()
	w := acquireAsync(ctx, leaver)
	testtime.WaitFor(t, "the leaver to queue", queueWait, func() bool { return q.Waiting() == 1 })
	cancel()
	if err := <-w; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	if q.Waiting() != 0 {
		t.Fatal("a cancelled waiter stayed queued")
	}
	for _, s := range held {
		s.Release(1)
	}
	// Many goroutines acquiring under contexts that end at random points,
	// racing the grants.
	var wg sync.WaitGroup
	for i := range 64 {
		s := q.NewShare()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				ctx, cancel := context.WithCancel(context.Background())
				if (i+j)%3 == 0 {
					cancel()
				} else if (i+j)%3 == 1 {
					go cancel()
				}
				if err := s.Acquire(ctx); err == nil {
					s.Release(float64(j))
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	assertAllFree(t, q, slots)
}

// assertAllFree takes every slot without waiting.
func assertAllFree(t *testing.T, q *FairQueue, slots int) {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.running != 0 || len(q.waiting) != 0 {
		t.Fatalf("%d slots of %d held, %d waiting, after every holder released", q.running, slots, len(q.waiting))
	}
}

// A holder that panics and releases in a deferred call leaks nothing.
func TestFairQueuePanicReleases(t *testing.T) {
	q := NewFairQueue(1, time.Second, WallClock(time.Now))
	s := q.NewShare()
	work := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("recovered: %v", r)
			}
		}()
		if err := s.Acquire(context.Background()); err != nil {
			return err
		}
		defer s.Release(1)
		panic("in the work")
	}
	if err := work(); err == nil {
		t.Fatal("no panic")
	}
	assertAllFree(t, q, 1)
}

// BenchmarkFairQueue is one uncontended grant and release beside the
// channel semaphore it replaced, and contended by GOMAXPROCS goroutines;
// uncontended, on the coarse clock the server uses and on a clock read
// at every release.
func BenchmarkFairQueue(b *testing.B) {
	coarse := NewCoarseClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	coarse.Start(ctx, time.Millisecond)
	for _, clock := range []struct {
		name string
		now  Clock
	}{{"coarse", coarse.Now}, {"wall", WallClock(time.Now)}} {
		b.Run("fair/uncontended/"+clock.name, func(b *testing.B) {
			q := NewFairQueue(4, time.Second, clock.now)
			s := q.NewShare()
			for b.Loop() {
				if err := s.Acquire(ctx); err != nil {
					b.Fatal(err)
				}
				s.Release(16 << 10)
			}
		})
	}
	b.Run("chan/uncontended", func(b *testing.B) {
		sem := make(chan struct{}, 4)
		for b.Loop() {
			sem <- struct{}{}
			<-sem
		}
	})
	b.Run("fair/contended", func(b *testing.B) {
		q := NewFairQueue(1, time.Second, coarse.Now)
		b.RunParallel(func(pb *testing.PB) {
			s := q.NewShare()
			ctx := context.Background()
			for pb.Next() {
				if err := s.Acquire(ctx); err != nil {
					b.Error(err)
					return
				}
				s.Release(16 << 10)
			}
		})
	})
	b.Run("chan/contended", func(b *testing.B) {
		sem := make(chan struct{}, 1)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				sem <- struct{}{}
				<-sem
			}
		})
	})
}

// Over a long uptime (thousands of half-lives, so that the keys' base
// moves on many times) the order still follows recent service, for shares
// waiting across a move and for shares idle across several.
func TestFairQueueLongUptime(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	q := NewFairQueue(1, time.Second, WallClock(clk.Now))
	heavy, light, idle := q.NewShare(), q.NewShare(), q.NewShare()
	for _, s := range []*Share{heavy, light, idle} {
		if err := s.Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
		s.Release(1)
	}
	for range 3000 {
		clk.advance(time.Second)
		heavy.Charge(1 << 20)
		light.Charge(1 << 10)
	}
	holder := q.NewShare()
	if err := holder.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	waits := queued(t, q, heavy, light, idle)
	clk.advance(600 * time.Second) // the base moves while they wait
	holder.Charge(1)
	for _, want := range []int{2, 1, 0} {
		got := next(t, holder, 1, waits)
		if got != want {
			t.Fatalf("granted share %d, want %d (idle, light, heavy)", got, want)
		}
		waits[got] = nil
		holder = []*Share{heavy, light, idle}[got]
	}
	holder.Release(0)
}
