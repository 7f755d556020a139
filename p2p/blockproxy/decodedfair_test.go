package blockproxy

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

// fixedNow is a clock that stands still: service does not decay.
func fixedNow() time.Duration { return 0 }

// noWork is a CPU meter that grants at once.
func noWork(context.Context, bool) (func(), error) { return func() {}, nil }

// getAsync starts cache.Get and returns where its error arrives (the
// block released at once).
func getAsync(cache *DecodedCache, r Requester, blk *wire.MsgBlock, work Work) <-chan error {
	done := make(chan error, 1)
	go func() {
		b, err := cache.Get(context.Background(), r, blk.BlockHash(), work)
		if err == nil {
			cache.Release(b)
		}
		done <- err
	}()
	return done
}

// await returns what done gives, failing the test if nothing comes in
// ioTimeout (scaled).
func await(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(testtime.Scale(ioTimeout)):
		t.Fatalf("%s: not served in %v", what, testtime.Scale(ioTimeout))
		return nil
	}
}

// The decode slot goes to the peer with the least recent decoding, not
// to the first in line: a light peer that decoded one block is granted
// ahead of a greedy peer that decoded four and queued first.
func TestDecodeSlotGrantOrder(t *testing.T) {
	blks := testBlocks(7, 40, 21)
	cache := NewDecodedCache(New(newMapNode(blks), NewGate(4, nil), 0, testPVer), 64<<20, fixedNow)
	light, greedy := Requester{Group: 1, Peer: 1}, Requester{Group: 2, Peer: 2}
	served := []struct {
		r    Requester
		blks []*wire.MsgBlock
	}{{light, blks[:1]}, {greedy, blks[1:5]}}
	for _, s := range served {
		for _, blk := range s.blks {
			if err := <-getAsync(cache, s.r, blk, noWork); err != nil {
				t.Fatal(err)
			}
		}
	}
	var mu sync.Mutex
	var order []Requester
	cache.decoded = func(r Requester) {
		mu.Lock()
		order = append(order, r)
		mu.Unlock()
	}
	// Another peer holds the slot while greedy, then light, queue.
	holder, put := cache.shares.Get(99)
	defer put()
	if err := holder.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	greedyDone := getAsync(cache, greedy, blks[5], noWork)
	waitFor(t, "greedy to queue", ioTimeout, func() bool { return cache.decoding.Waiting() == 1 })
	lightDone := getAsync(cache, light, blks[6], noWork)
	waitFor(t, "light to queue", ioTimeout, func() bool { return cache.decoding.Waiting() == 2 })
	holder.Release(0)
	for _, done := range []<-chan error{greedyDone, lightDone} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if want := []Requester{light, greedy}; len(order) != 2 || order[0] != want[0] || order[1] != want[1] {
		t.Fatalf("decode slot granted to %v, want %v (least recent decoding first)", order, want)
	}
}

// No peer holds the decode slot while it waits for something else: a peer
// waiting for its turn in the CPU meter, or for bytes of the bound to be
// released, does not keep another peer's block from being decoded.
func TestDecodeSlotNotHeldWhileWaiting(t *testing.T) {
	blks := testBlocks(3, 40, 22)
	big := testBlocks(1, 400, 23)[0]
	costs := make([]int64, len(blks))
	for i, blk := range blks {
		costs[i] = decodedBlockCost(blk)
	}
	for _, tc := range []struct {
		name string
		// bound is the cache's; pin, when set, is a block pinned by a
		// third peer before the waiter asks.
		bound  int64
		pin    bool
		waiter *wire.MsgBlock
		// meter, when set, blocks the waiter in its CPU meter until
		// closed.
		meter bool
	}{
		{name: "waiting in the CPU meter", bound: 64 << 20, waiter: blks[1], meter: true},
		{name: "waiting for bytes of the bound", bound: costs[0] + costs[2] + costs[2]/2, pin: true, waiter: big},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := append([]*wire.MsgBlock{big}, blks...)
			cache := NewDecodedCache(New(newMapNode(all), NewGate(4, nil), 0, testPVer), tc.bound, fixedNow)
			var pinned *DecodedBlock
			if tc.pin {
				var err error
				if pinned, err = cache.Get(context.Background(), Requester{Group: 3, Peer: 3}, blks[0].BlockHash(), noWork); err != nil {
					t.Fatal(err)
				}
			}
			inMeter, meter := make(chan struct{}), make(chan struct{})
			var waiterWork Work = noWork
			if tc.meter {
				waiterWork = func(context.Context, bool) (func(), error) {
					close(inMeter)
					<-meter
					return func() {}, nil
				}
			} else {
				close(meter)
			}
			waiterDone := getAsync(cache, Requester{Group: 1, Peer: 1}, tc.waiter, waiterWork)
			if tc.meter {
				<-inMeter
			} else {
				waitFor(t, "the waiter to wait for bytes", ioTimeout, func() bool {
					cache.mu.Lock()
					defer cache.mu.Unlock()
					return cache.freed != nil
				})
			}
			// Another peer's block is decoded meanwhile.
			if err := await(t, getAsync(cache, Requester{Group: 2, Peer: 2}, blks[2], noWork), "another peer's block"); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-waiterDone:
				t.Fatalf("the waiter was served while waiting: %v", err)
			default:
			}
			if tc.meter {
				close(meter)
			}
			if pinned != nil {
				cache.Release(pinned)
			}
			if err := <-waiterDone; err != nil {
				t.Fatal(err)
			}
			if used := cache.Used(); used > tc.bound {
				t.Errorf("cache holds %d bytes, bound %d", used, tc.bound)
			}
		})
	}
}
