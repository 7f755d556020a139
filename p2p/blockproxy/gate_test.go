package blockproxy

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
)

// waiting returns the Acquire calls waiting for a slot.
func (g *Gate) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, grp := range g.groups {
		for _, p := range grp.peers {
			n += len(p.waiters)
		}
	}
	return n
}

// grant is one Acquire that got its slot.
type grant struct {
	label   string
	release func()
}

// queueWaiters starts one Acquire per requester, in order, each queued
// before the next starts; granted receives them as they get their slot.
func queueWaiters(t *testing.T, ctx context.Context, g *Gate, labels []string, reqs []Requester, granted chan<- grant) {
	t.Helper()
	base := g.waiting()
	for i, r := range reqs {
		go func() {
			release, err := g.Acquire(ctx, r)
			if err == nil {
				granted <- grant{labels[i], release}
			}
		}()
		waitFor(t, fmt.Sprintf("waiter %s queued", labels[i]), ioTimeout, func() bool { return g.waiting() == base+i+1 })
	}
}

// With one slot held, waiters are granted round-robin: by group, then by
// peer within the group, then in the order one peer asked; a peer just
// served goes to the back.
func TestGateTakesTurns(t *testing.T) {
	a := Requester{Group: 1, Peer: 1}
	a2 := Requester{Group: 1, Peer: 2} // a's neighbour in the same /16
	b := Requester{Group: 2, Peer: 3}
	c := Requester{Group: 3, Peer: 4}
	holder := Requester{Group: 9, Peer: 9}
	type waiter struct {
		label string
		r     Requester
	}
	repeat := func(label string, r Requester, n int) []waiter {
		var ws []waiter
		for i := range n {
			ws = append(ws, waiter{fmt.Sprintf("%s%d", label, i+1), r})
		}
		return ws
	}
	tests := []struct {
		name    string
		waiters []waiter
		want    []string
	}{
		{"a peer with ten queued waits behind another peer's one",
			append(repeat("a", a, 10), waiter{"b1", b}),
			[]string{"a1", "b1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10"}},
		{"peers of one group take turns",
			append(repeat("a", a, 3), repeat("n", a2, 2)...),
			[]string{"a1", "n1", "a2", "n2", "a3"}},
		{"groups take turns before their peers",
			[]waiter{{"a1", a}, {"n1", a2}, {"b1", b}, {"c1", c}},
			[]string{"a1", "b1", "c1", "n1"}},
		{"one peer alone is served in its order",
			repeat("a", a, 4),
			[]string{"a1", "a2", "a3", "a4"}},
		{"the peer holding the slot goes to the back",
			append(repeat("h", holder, 2), waiter{"b1", b}),
			[]string{"b1", "h1", "h2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			g := NewGate(1, nil)
			release, err := g.Acquire(ctx, holder)
			if err != nil {
				t.Fatal(err)
			}
			var labels []string
			var reqs []Requester
			for _, w := range tt.waiters {
				labels, reqs = append(labels, w.label), append(reqs, w.r)
			}
			granted := make(chan grant, len(reqs))
			queueWaiters(t, ctx, g, labels, reqs, granted)
			var got []string
			for range tt.want {
				release()
				gr := <-granted
				got = append(got, gr.label)
				release = gr.release
			}
			release()
			if !slices.Equal(got, tt.want) {
				t.Fatalf("granted %v, want %v", got, tt.want)
			}
			if n := g.InFlight(); n != 0 || len(g.groups) != 0 || len(g.turns) != 0 {
				t.Fatalf("after every release: %d in flight, %d groups, %d turns held", n, len(g.groups), len(g.turns))
			}
		})
	}
}

// A peer has one fetch in flight however many slots are free: its second
// request waits for its first, while another peer's is granted at once.
func TestGateOneFetchPerPeer(t *testing.T) {
	ctx := context.Background()
	g := NewGate(3, nil)
	a, b := Requester{Group: 1, Peer: 1}, Requester{Group: 1, Peer: 2}
	granted := make(chan grant, 3)
	acquire := func(label string, r Requester) {
		go func() {
			if release, err := g.Acquire(ctx, r); err == nil {
				granted <- grant{label, release}
			}
		}()
	}
	first, err := g.Acquire(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	acquire("a2", a)
	waitFor(t, "a2 queued", ioTimeout, func() bool { return g.waiting() == 1 })
	if n := g.InFlight(); n != 1 {
		t.Fatalf("%d in flight with a's second request queued, want 1", n)
	}
	acquire("b1", b)
	gr := <-granted
	if gr.label != "b1" {
		t.Fatalf("%s granted, want b1", gr.label)
	}
	gr.release()
	if n, w := g.InFlight(), g.waiting(); n != 1 || w != 1 {
		t.Fatalf("%d in flight and %d waiting, want a's first and a2", n, w)
	}
	first()
	first() // a second call is harmless
	if gr = <-granted; gr.label != "a2" {
		t.Fatalf("%s granted, want a2", gr.label)
	}
	gr.release()
	if n := g.InFlight(); n != 0 {
		t.Fatalf("%d in flight after every release", n)
	}
}

// The gate allows max fetches, one while the indexer is busy; a waiter
// that gives up leaves its turn, and a slot granted to a waiter as it gave
// up goes back.
func TestFetchGate(t *testing.T) {
	ctx := context.Background()
	var busy atomic.Bool
	g := NewGate(3, busy.Load)
	var held []func()
	for i := range 3 { // recent blocks: they may take every slot
		release, err := g.AcquireRecent(ctx, Requester{Group: uint64(i), Peer: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	gone, cancel := context.WithCancel(ctx)
	granted := make(chan grant, 3)
	for i := range 3 {
		c := ctx
		if i == 1 {
			c = gone
		}
		queueWaiters(t, c, g, []string{fmt.Sprint(i)}, []Requester{{Group: uint64(10 + i), Peer: uint64(10 + i)}}, granted)
	}
	cancel() // waiter 1 gives up
	waitFor(t, "waiter 1 left", ioTimeout, func() bool { return g.waiting() == 2 })
	busy.Store(true)
	held[0]() // 2 in flight, but busy allows 1: nobody gets in (grants happen within release)
	if n, w := g.InFlight(), g.waiting(); n != 2 || w != 2 {
		t.Fatalf("busy: %d in flight, %d waiting, want 2 and 2", n, w)
	}
	held[1]()
	held[2]() // 0 in flight: one gets in
	gr := <-granted
	if gr.label != "0" {
		t.Fatalf("waiter %s first, want 0", gr.label)
	}
	busy.Store(false)
	gr.release()
	if gr = <-granted; gr.label != "2" {
		t.Fatalf("waiter %s next, want 2", gr.label)
	}
	if n := g.InFlight(); n != 1 {
		t.Fatalf("%d in flight, want 1", n)
	}
	gr.release()

	// A waiter whose context ends as it is granted hands the slot back:
	// with the context ended before Acquire and a slot free, Acquire sees
	// both at once and picks either at random.
	ended, end := context.WithCancel(ctx)
	end()
	for i := range 100 {
		release, err := g.Acquire(ended, Requester{Peer: uint64(i)})
		if err == nil {
			release()
		}
		if n := g.InFlight(); n != 0 {
			t.Fatalf("%d in flight after an ended acquire (err %v)", n, err)
		}
	}
}

// Historical fetches hold every slot but one: with two slots, a second
// historical fetch waits while one is in flight, and a recent block asked
// meanwhile gets the slot left at once; while the indexer is busy (one
// slot) a historical fetch may take it.
func TestGateKeepsASlotForRecentBlocks(t *testing.T) {
	ctx := context.Background()
	var busy atomic.Bool
	g := NewGate(2, busy.Load)
	first, err := g.Acquire(ctx, Requester{Group: 1, Peer: 1})
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan grant, 2)
	queueWaiters(t, ctx, g, []string{"historical"}, []Requester{{Group: 2, Peer: 2}}, granted)
	if n := g.InFlight(); n != 1 {
		t.Fatalf("%d in flight, want 1: the second slot is for recent blocks", n)
	}
	recent, err := g.AcquireRecent(ctx, Requester{Group: 3, Peer: 3})
	if err != nil {
		t.Fatal(err)
	}
	if n, w := g.InFlight(), g.waiting(); n != 2 || w != 1 {
		t.Fatalf("%d in flight, %d waiting, want 2 and the historical one", n, w)
	}
	recent()
	if n := g.InFlight(); n != 1 {
		t.Fatalf("%d in flight after the recent fetch, want 1 (the historical waiter still waits)", n)
	}
	first()
	gr := <-granted
	if gr.label != "historical" {
		t.Fatalf("%s granted, want the historical waiter", gr.label)
	}
	gr.release()

	busy.Store(true) // one slot: historical fetches may use it
	only, err := g.Acquire(ctx, Requester{Group: 4, Peer: 4})
	if err != nil {
		t.Fatal(err)
	}
	only()
}
