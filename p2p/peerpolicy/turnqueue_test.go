package peerpolicy

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

// A turn queue charges a request one turn per quantum of its work, at
// least one, whatever its pieces: pieces released with Yield continue the
// request, Release ends it.
func TestTurnQueueChargesTurnsPerRequest(t *testing.T) {
	const quantum = 1000
	type piece struct {
		cost float64
		last bool
	}
	for _, tc := range []struct {
		name   string
		pieces []piece
		turns  float64
	}{
		{"one tiny request", []piece{{1, true}}, 1},
		{"a request of nothing", []piece{{0, true}}, 1},
		{"two tiny requests", []piece{{1, true}, {1, true}}, 2},
		{"a request of exactly a quantum", []piece{{quantum, true}}, 1},
		{"a quantum and a half, one piece", []piece{{1.5 * quantum, true}}, 1.5},
		{"three quanta in one piece", []piece{{3 * quantum, true}}, 3},
		{"three half quanta in pieces", []piece{{quantum / 2, false}, {quantum / 2, false}, {quantum / 2, true}}, 1.5},
		{"a quantum in pieces, then a half in one", []piece{{quantum / 4, false}, {quantum / 4, false}, {quantum / 2, false}, {quantum / 2, true}}, 1.5},
		{"ten pieces of a tenth", []piece{{100, false}, {100, false}, {100, false}, {100, false}, {100, false}, {100, false}, {100, false}, {100, false}, {100, false}, {100, true}}, 1},
		{"a quantum in pieces, then an empty last piece", []piece{{quantum / 2, false}, {quantum / 2, false}, {0, true}}, 1},
		{"a long request, then a tiny one", []piece{{quantum, false}, {quantum, false}, {1, true}, {1, true}}, 3.001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{now: time.Unix(1_700_000_000, 0)} // stands still: no decay
			q := NewTurnQueue(1, quantum, time.Second, WallClock(clk.Now))
			s := q.NewShare()
			for _, p := range tc.pieces {
				if err := s.Acquire(context.Background()); err != nil {
					t.Fatal(err)
				}
				if p.last {
					s.Release(p.cost)
				} else {
					s.Yield(p.cost)
				}
			}
			q.mu.Lock()
			got := s.svc.key
			q.mu.Unlock()
			if got != tc.turns {
				t.Fatalf("charged %v turns, want %v", got, tc.turns)
			}
		})
	}
}

// In a queue of NewFairQueue, Yield is Release: the cost itself is the
// service.
func TestFairQueueYieldChargesCost(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	q := NewFairQueue(1, time.Second, WallClock(clk.Now))
	s := q.NewShare()
	for _, c := range []float64{100, 250} {
		if err := s.Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
		s.Yield(c)
	}
	if s.svc.key != 350 {
		t.Fatalf("service %v, want 350", s.svc.key)
	}
}

// grantSim drives a one-slot queue through Acquire, Release and Yield,
// one grant at a time: every waiting share is a goroutine blocked in
// Acquire that reports its index on granted once it holds the slot, and
// the simulated work of a piece moves the clock by its cost.
type grantSim struct {
	t       *testing.T
	q       *FairQueue
	clk     *fakeClock
	granted chan int
	shares  []*Share
}

// piecePace is the simulated time a piece of work takes: a fixed cost
// per grant (the lookup, the frame's header, the peer's message) and a
// cost per byte, about what a loaded two-core machine shows.
func piecePace(cost float64) time.Duration {
	return 50*time.Microsecond + time.Duration(10*cost)
}

// queue makes share i wait for the slot and returns once it waits.
func (g *grantSim) queue(i int) {
	n := g.q.Waiting()
	go func() {
		if err := g.shares[i].Acquire(context.Background()); err != nil {
			g.t.Error(err)
			return
		}
		g.granted <- i
	}()
	deadline := time.Now().Add(testtime.Scale(queueWait))
	for g.q.Waiting() != n+1 {
		if time.Now().After(deadline) {
			g.t.Fatalf("share %d did not queue", i)
		}
		runtime.Gosched()
	}
}

// next waits for the share granted the slot.
func (g *grantSim) next() int {
	select {
	case i := <-g.granted:
		return i
	case <-time.After(testtime.Scale(queueWait)):
		g.t.Fatal("nobody was granted the released slot")
		return -1
	}
}

// A light client with one request in flight among 120 peers that each
// keep one-block requests coming back to back (the tiny-requests attack:
// alternately a getcfheaders answer of 100 bytes and a cfilter of 23 KB,
// each a piece of 2 KiB plus its bytes) asks for 100 filters: a piece
// for the block hashes, then 36 chunks of 64 KiB. Under turns its request
// costs work/quantum turns, and each turn waits at most for every other
// peer's turn, so it is served within about that many rounds of grants,
// whether the client is new or asks back to back, and a client quiet for
// a half-life is served at once (within a round). Under service counted
// in bytes (the policy before turns), each of its chunks costs as much as
// several of an attacker's requests and it is not.
func TestTurnQueueLightClientAmongTinyRequests(t *testing.T) {
	const (
		peers     = 120
		grantCost = 2 << 10
		quantum   = 128 << 10
		chunks    = 36
		// halfLife is shorter than the server's (4 s), so that the
		// services reach their steady level in fewer grants.
		halfLife = time.Second
	)
	tiny := []float64{grantCost + 100, grantCost + 23_000}
	request := []float64{grantCost + 100*32}
	for range chunks {
		request = append(request, grantCost+64<<10)
	}
	work := 0.0
	for _, c := range request {
		work += c
	}
	turns := int((work + quantum - 1) / quantum)
	// It waits for a round (every other peer's turn) before its first
	// piece and one per turn its request costs, and a round more for what
	// decay moves meanwhile.
	bound := (turns + 2) * (peers + 1)
	for _, tc := range []struct {
		name string
		// turns: NewTurnQueue; else NewFairQueue (service in bytes).
		turns bool
		// busy: the client asks back to back from the start, through the
		// attackers' warm-up, and its request after it is judged; else
		// it connects (a new share) after the warm-up.
		busy bool
		// quiet is how long the busy client then pauses before the
		// request judged.
		quiet time.Duration
		// quick: the request is judged against one round and its own
		// pieces (a quiet client's credit), not the bound of its turns.
		quick  bool
		within bool
	}{
		{"turns, a new client", true, false, 0, false, true},
		{"turns, a client asking back to back", true, true, 0, false, true},
		{"turns, a client quiet for a half-life", true, true, halfLife, true, true},
		{"bytes, a new client", false, false, 0, false, false},
		{"bytes, a client asking back to back", false, true, 0, false, false},
		{"bytes, a client quiet for a half-life", false, true, halfLife, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
			q := NewFairQueue(1, halfLife, WallClock(clk.Now))
			if tc.turns {
				q = NewTurnQueue(1, quantum, halfLife, WallClock(clk.Now))
			}
			g := &grantSim{t: t, q: q, clk: clk, granted: make(chan int, 1)}
			for range peers {
				g.shares = append(g.shares, q.NewShare())
			}
			light := peers
			g.shares = append(g.shares, nil) // the client's, made when it connects
			holder := q.NewShare()
			if err := holder.Acquire(context.Background()); err != nil {
				t.Fatal(err)
			}
			for i := range peers {
				g.queue(i)
			}
			sent := make([]int, peers) // requests of each attacker so far
			release := func() { holder.Release(0) }
			piece := 0        // the client's next piece
			again := tc.busy  // the client asks again as soon as served
			requestsDone := 0 // the client's requests served
			// step grants the slot once and runs the piece granted,
			// queueing the share's next piece; it reports who ran.
			step := func() int {
				release()
				i := g.next()
				if i == light {
					c := request[piece]
					clk.advance(piecePace(c))
					last := piece == len(request)-1
					if last {
						release = func() { g.shares[light].Release(c) }
						piece = 0
						requestsDone++
					} else {
						release = func() { g.shares[light].Yield(c) }
						piece++
					}
					if !last || again {
						g.queue(light)
					}
					return i
				}
				c := tiny[sent[i]%2]
				sent[i]++
				clk.advance(piecePace(c))
				release = func() { g.shares[i].Release(c) }
				g.queue(i)
				return i
			}
			if tc.busy {
				g.shares[light] = q.NewShare()
				g.queue(light)
			}
			// Five half-lives of attack: every service reaches its steady
			// level.
			for began := clk.Now(); clk.Now().Sub(began) < 5*halfLife; {
				step()
			}
			if tc.busy {
				// Let the request in progress end, then pause.
				again = false
				for done := requestsDone; requestsDone == done; {
					step()
				}
				for paused := clk.Now(); clk.Now().Sub(paused) < tc.quiet; {
					step() // the attackers alone
				}
			} else {
				g.shares[light] = q.NewShare()
			}
			limit := bound
			if tc.quick {
				limit = len(request) + peers + 1
			}
			g.queue(light)
			took := 0
			for done := requestsDone; requestsDone == done && took <= limit; {
				step()
				took++
			}
			for q.Waiting() > 0 { // every waiter served once, then done
				release()
				i := g.next()
				release = func() { g.shares[i].Release(0) }
			}
			release()
			assertAllFree(t, q, 1)
			if took > limit {
				t.Logf("the client's request of %d pieces (%d turns) was not served within %d grants", len(request), turns, limit)
			} else {
				t.Logf("the client's request of %d pieces (%d turns) was served in %d grants; bound %d", len(request), turns, took, limit)
			}
			if got := took <= limit; got != tc.within {
				t.Fatalf("served in %d grants: within the bound of %d is %v, want %v", took, limit, got, tc.within)
			}
		})
	}
}
