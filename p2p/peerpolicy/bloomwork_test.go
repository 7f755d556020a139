package peerpolicy

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

// fakeClock is a clock that moves only when work "runs" or the meter
// sleeps.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// The meter holds BIP-37 work to its share of the CPU: work of 10 ms
// pieces, back to back, at a share of a quarter of two cores (half a core)
// takes twice its CPU time in wall time once the burst is spent.
func TestWorkMeterHoldsTheShare(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	w := NewWorkMeter(0.25, 2, clk.Now)
	w.sleep = func(_ context.Context, d time.Duration) error { clk.advance(d); return nil }
	start := clk.Now()
	ws := w.NewShare()
	const pieces, each = 1000, 10 * time.Millisecond
	for range pieces {
		done, err := w.Acquire(context.Background(), ws)
		if err != nil {
			t.Fatal(err)
		}
		clk.advance(each)
		done()
	}
	wall := clk.Now().Sub(start)
	work := pieces * each
	// The share is half a core: wall ≈ 2 × work, less the burst.
	if min := 2*work - time.Duration(float64(WorkBurst)*0.5)*2 - time.Second; wall < min {
		t.Fatalf("%v of work took %v of wall time: more than the share", work, wall)
	}
	if wall > 2*work+pieces*2*time.Millisecond {
		t.Fatalf("%v of work took %v of wall time: throttled below the share", work, wall)
	}
	if w.Spent() != work {
		t.Fatalf("spent %v, want %v", w.Spent(), work)
	}
	t.Logf("%v of BIP-37 work in %v at half a core", work, wall)
}

// At most the meter's slots run at once, and peers with equal work are
// served in arrival order; a waiter whose context ends leaves the queue.
func TestWorkMeterSlots(t *testing.T) {
	w := NewWorkMeter(0.5, 2, time.Now) // one core: one slot
	if w.slots.slots != 1 {
		t.Fatalf("%d slots for one core", w.slots.slots)
	}
	waiting := func(n int) func() bool { return func() bool { return w.slots.Waiting() == n } }
	var running, peak atomic.Int32
	var order []int
	var mu sync.Mutex
	first, err := w.Acquire(context.Background(), w.NewShare())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 5 {
		ws := w.NewShare()
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, err := w.Acquire(context.Background(), ws)
			if err != nil {
				t.Error(err)
				return
			}
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			running.Add(-1)
			done()
		}()
		testtime.WaitFor(t, "the waiter to queue", 10*time.Second, waiting(i+1))
	}
	ctx, cancel := context.WithCancel(context.Background())
	leaver := make(chan error, 1)
	go func() { _, err := w.Acquire(ctx, w.NewShare()); leaver <- err }()
	testtime.WaitFor(t, "the leaver to queue", 10*time.Second, waiting(6))
	cancel()
	if err := <-leaver; err == nil {
		t.Fatal("a cancelled waiter got a slot")
	}
	first()
	wg.Wait()
	if peak.Load() != 1 {
		t.Fatalf("%d pieces of work at once with one slot", peak.Load())
	}
	for i, got := range order {
		if got != i {
			t.Fatalf("served in order %v, want arrival order", order)
		}
	}
}

// Peers with heavy filters pulling filtered blocks back to back (each
// piece of their work long, charged as such) queue for the meter; a
// wallet that asks now and then is granted the next slot, ahead of all of
// them, and the heavy peers take turns among themselves.
func TestWorkMeterServesTheLightPeerFirst(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	w := NewWorkMeter(0.5, 2, clk.Now) // one slot
	w.sleep = func(_ context.Context, d time.Duration) error { clk.advance(d); return nil }
	heavy := make([]*WorkShare, 8)
	for i := range heavy {
		heavy[i] = w.NewShare()
	}
	wallet := w.NewShare()
	run := func(ws *WorkShare, d time.Duration) {
		done, err := w.Acquire(context.Background(), ws)
		if err != nil {
			t.Fatal(err)
		}
		clk.advance(d)
		done()
	}
	run(wallet, time.Millisecond)
	for range 5 {
		for _, ws := range heavy {
			run(ws, 50*time.Millisecond)
		}
	}
	holder := w.NewShare()
	release, err := w.Acquire(context.Background(), holder)
	if err != nil {
		t.Fatal(err)
	}
	type grant struct {
		who  int
		done func()
	}
	grants := make(chan grant, len(heavy)+1)
	for i, ws := range append(append([]*WorkShare{}, heavy...), wallet) {
		go func() {
			done, err := w.Acquire(context.Background(), ws)
			if err != nil {
				t.Error(err)
				return
			}
			grants <- grant{i, done}
		}()
		testtime.WaitFor(t, "the peer to queue", 10*time.Second, func() bool { return w.slots.Waiting() == i+1 })
	}
	release()
	seen := map[int]bool{}
	for n := range len(heavy) + 1 {
		g := <-grants
		if n == 0 && g.who != len(heavy) {
			t.Fatalf("heavy peer %d granted before the wallet", g.who)
		}
		if seen[g.who] {
			t.Fatalf("peer %d granted twice", g.who)
		}
		seen[g.who] = true
		clk.advance(50 * time.Millisecond)
		g.done()
	}
}

// Shared work (AcquireShared) is charged to the bucket, not to the peer
// in whose turn it ran: after a peer's 50 ms of shared work and another's
// 10 ms of its own, the first is granted the next slot ahead of the
// second; had the 50 ms been its own, the second would go first. Either
// way the bucket was charged the 60 ms.
func TestWorkMeterSharedWorkNotChargedToThePeer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		shared    bool
		wantFirst int
	}{
		{"shared work", true, 0},
		{"the peer's own work", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
			w := NewWorkMeter(0.5, 2, clk.Now) // one slot
			w.sleep = func(_ context.Context, d time.Duration) error { clk.advance(d); return nil }
			peers := []*WorkShare{w.NewShare(), w.NewShare()}
			acquire := w.Acquire
			if tc.shared {
				acquire = w.AcquireShared
			}
			for i, piece := range []struct {
				acquire func(context.Context, *WorkShare) (func(), error)
				took    time.Duration
			}{{acquire, 50 * time.Millisecond}, {w.Acquire, 10 * time.Millisecond}} {
				done, err := piece.acquire(context.Background(), peers[i])
				if err != nil {
					t.Fatal(err)
				}
				clk.advance(piece.took)
				done()
			}
			if w.Spent() != 60*time.Millisecond {
				t.Fatalf("the bucket was charged %v, want 60ms", w.Spent())
			}
			if first := firstGranted(t, w, peers); first != tc.wantFirst {
				t.Fatalf("peer %d granted first, want peer %d", first, tc.wantFirst)
			}
		})
	}
}

// Work for every peer (AcquireShared) waits ahead of every peer's own
// work: queued after a peer that has had nothing, by a peer that has had
// 50 ms, it is granted first; the same peer's own work would go second.
func TestWorkMeterSharedWorkGoesFirst(t *testing.T) {
	for _, tc := range []struct {
		name      string
		shared    bool
		wantFirst string
	}{
		{"shared work", true, "heavy"},
		{"own work", false, "light"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
			w := NewWorkMeter(0.5, 2, clk.Now) // one slot
			w.sleep = func(_ context.Context, d time.Duration) error { clk.advance(d); return nil }
			heavy, light := w.NewShare(), w.NewShare()
			done, err := w.Acquire(context.Background(), heavy)
			if err != nil {
				t.Fatal(err)
			}
			clk.advance(50 * time.Millisecond)
			done()
			release, err := w.Acquire(context.Background(), w.NewShare())
			if err != nil {
				t.Fatal(err)
			}
			granted := make(chan string, 2)
			queue := func(name string, ws *WorkShare, acquire func(context.Context, *WorkShare) (func(), error), n int) {
				go func() {
					done, err := acquire(context.Background(), ws)
					if err != nil {
						t.Error(err)
						return
					}
					granted <- name
					done()
				}()
				testtime.WaitFor(t, "the peer to queue", 10*time.Second, func() bool { return w.slots.Waiting() == n })
			}
			queue("light", light, w.Acquire, 1)
			heavyAcquire := w.Acquire
			if tc.shared {
				heavyAcquire = w.AcquireShared
			}
			queue("heavy", heavy, heavyAcquire, 2)
			release()
			if first := <-granted; first != tc.wantFirst {
				t.Fatalf("%s granted first, want %s", first, tc.wantFirst)
			}
			<-granted
		})
	}
}

// firstGranted holds the meter's slot while peers queue for it, the last
// first, releases it, and returns the index of the peer granted first
// once both grants are done.
func firstGranted(t *testing.T, w *WorkMeter, peers []*WorkShare) int {
	t.Helper()
	release, err := w.Acquire(context.Background(), w.NewShare())
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan int, len(peers))
	for i := len(peers) - 1; i >= 0; i-- { // the second peer queues first
		go func() {
			done, err := w.Acquire(context.Background(), peers[i])
			if err != nil {
				t.Error(err)
				return
			}
			granted <- i
			done()
		}()
		testtime.WaitFor(t, "the peer to queue", 10*time.Second, func() bool { return w.slots.Waiting() == len(peers)-i })
	}
	release()
	first := <-granted
	for range len(peers) - 1 {
		<-granted
	}
	return first
}

// A peer granted the slot while the bucket is in debt sleeps the debt
// off; a peer with less work that queues meanwhile is served first once
// the debt is paid (the slot is not kept by whoever was picked when the
// last piece ended).
func TestWorkMeterDebtWaitYieldsToLighterPeer(t *testing.T) {
	w := NewWorkMeter(1, 1, time.Now) // a core: debt is paid at 1 s a second
	// Whoever sleeps off debt does so once the other peer queued, however
	// slow the machine: the light peer queues during the heavy one's sleep.
	w.sleep = func(ctx context.Context, d time.Duration) error {
		testtime.WaitFor(t, "the other peer to queue", 10*time.Second, func() bool { return w.Waiting() == 1 })
		return sleepCtx(ctx, d)
	}
	heavy, light := w.NewShare(), w.NewShare()
	w.Charge(heavy, WorkBurst+300*time.Millisecond) // heavy's work, the bucket 300 ms in debt
	order := make(chan string, 2)
	run := func(name string, ws *WorkShare) {
		done, err := w.Acquire(context.Background(), ws)
		if err != nil {
			t.Error(err)
			order <- name
			return
		}
		order <- name
		done()
	}
	go run("heavy", heavy)
	testtime.WaitFor(t, "heavy to hold the slot", 10*time.Second, func() bool {
		w.slots.mu.Lock()
		defer w.slots.mu.Unlock()
		return w.slots.running == 1
	})
	go run("light", light)
	testtime.WaitFor(t, "light to queue", 10*time.Second, func() bool { return w.Waiting() == 1 })
	if first := <-order; first != "light" {
		t.Fatalf("%s served first, want the light peer that queued during the debt", first)
	}
	<-order
}
