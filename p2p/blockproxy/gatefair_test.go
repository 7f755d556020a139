package blockproxy

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// A free slot goes to the ready group with the least service (fetches
// granted, kept while the group is idle), not to the next in turn: a
// wallet that fetched once is served ahead of downloaders that fetched
// many times and queued first; of equal counts, the older service weighs
// less (it decays with the grants made since).
func TestGateLeastServedGroupFirst(t *testing.T) {
	group := func(n uint64) Requester { return Requester{Group: n, Peer: n} }
	for _, tc := range []struct {
		name string
		// history is how many fetches each group made before, one at a
		// time, each group idle afterwards.
		history []int
		// queued are the groups (index in history) queued behind the
		// holder, in this order.
		queued []int
		want   []int
	}{
		{"a wallet ahead of downloaders", []int{5, 5, 5, 1}, []int{0, 1, 2, 3}, []int{3, 0, 1, 2}},
		{"less service first", []int{5, 3, 1}, []int{0, 1, 2}, []int{2, 1, 0}},
		{"a new group first", []int{2, 2, 0}, []int{0, 1, 2}, []int{2, 0, 1}},
		{"older service counts less", []int{2, 2, 2}, []int{2, 1, 0}, []int{0, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			g := NewGate(1, nil)
			for i, n := range tc.history {
				for range n {
					release, err := g.Acquire(ctx, group(uint64(i)))
					if err != nil {
						t.Fatal(err)
					}
					release()
				}
			}
			release, err := g.Acquire(ctx, group(99))
			if err != nil {
				t.Fatal(err)
			}
			var labels []string
			var reqs []Requester
			for _, i := range tc.queued {
				labels, reqs = append(labels, fmt.Sprint(i)), append(reqs, group(uint64(i)))
			}
			granted := make(chan grant, len(reqs))
			queueWaiters(t, ctx, g, labels, reqs, granted)
			var got []string
			for range tc.want {
				release()
				gr := <-granted
				got = append(got, gr.label)
				release = gr.release
			}
			release()
			var want []string
			for _, i := range tc.want {
				want = append(want, fmt.Sprint(i))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("granted %v, want %v", got, want)
			}
		})
	}
}

// The idle groups' keys are bounded: past maxIdleGroups, those below one
// recent fetch are forgotten.
func TestGateIdleGroupsBounded(t *testing.T) {
	ctx := context.Background()
	g := NewGate(1, nil)
	for n := range uint64(maxIdleGroups + gateHalfLife*8) {
		release, err := g.Acquire(ctx, Requester{Group: n, Peer: n})
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.idle) > maxIdleGroups {
		t.Fatalf("%d idle groups kept, bound %d", len(g.idle), maxIdleGroups)
	}
}

// A fetch of a recent block goes ahead of historical fetches whatever the
// groups' service: a wallet that fetched more than every downloader still
// gets the next slot for the new block it needs; among recent fetches the
// least service goes first.
func TestGateRecentBlocksFirst(t *testing.T) {
	ctx := context.Background()
	g := NewGate(1, nil)
	wallet, other := Requester{Group: 1, Peer: 1}, Requester{Group: 3, Peer: 3}
	downloaders := []Requester{{Group: 2, Peer: 2}, {Group: 4, Peer: 4}}
	for range 5 { // the wallet and the other recent reader fetched most
		for _, r := range []Requester{wallet, other, other} {
			release, err := g.Acquire(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			release()
		}
	}
	release, err := g.Acquire(ctx, Requester{Group: 99, Peer: 99})
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan grant, 4)
	type waiter struct {
		label  string
		r      Requester
		recent bool
	}
	for i, w := range []waiter{{"d0", downloaders[0], false}, {"d1", downloaders[1], false}, {"other", other, true}, {"wallet", wallet, true}} {
		go func() {
			acquire := g.Acquire
			if w.recent {
				acquire = g.AcquireRecent
			}
			if rel, err := acquire(ctx, w.r); err == nil {
				granted <- grant{w.label, rel}
			}
		}()
		waitFor(t, w.label+" queued", ioTimeout, func() bool { return g.waiting() == i+1 })
	}
	var got []string
	for range 4 {
		release()
		gr := <-granted
		got = append(got, gr.label)
		release = gr.release
	}
	release()
	if want := []string{"wallet", "other", "d0", "d1"}; !slices.Equal(got, want) {
		t.Fatalf("granted %v, want %v", got, want)
	}
}
