package peerpolicy

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

// stoppedClock is a Clock standing still: service does not decay, so
// the order of grants follows from the takes alone.
func stoppedClock() time.Duration { return 0 }

// granted reports whether a's waiting take has been granted, receiving
// its token if so.
func granted(a *PoolAccount) bool {
	select {
	case <-a.Granted():
		return true
	default:
		return false
	}
}

// Waiting takes are granted least served first, and a give wakes only as
// many as it covers; no smaller take overtakes the first in line.
func TestFairPoolGrantOrder(t *testing.T) {
	tests := []struct {
		name string
		// served is each account's units taken (and given back) before.
		served []int64
		// need is each account's waiting take, queued in this order.
		need []int64
		// gives are the units given back in turn; after each, want lists
		// the accounts granted by it.
		gives []int64
		want  [][]int
	}{
		{"least served first", []int64{90, 10, 50}, []int64{60, 60, 60}, []int64{60, 60, 60}, [][]int{{1}, {2}, {0}}},
		{"only those the give covers", []int64{0, 0, 0}, []int64{40, 40, 40}, []int64{80, 40}, [][]int{{0, 1}, {2}}},
		{"a large take at the head holds back the small", []int64{0, 50, 50}, []int64{100, 10, 10}, []int64{50, 50}, [][]int{{}, {0}}},
		{"a give short of every take wakes nobody", []int64{0, 0}, []int64{70, 70}, []int64{20, 50, 70}, [][]int{{}, {0}, {1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewFairPool(100, time.Second, stoppedClock)
			accounts := make([]*PoolAccount, len(tc.served))
			for i := range accounts {
				accounts[i] = p.NewAccount()
			}
			for i := range accounts {
				if tc.served[i] > 0 {
					if !accounts[i].Take(tc.served[i]) {
						t.Fatalf("account %d: history take not granted", i)
					}
					p.Give(tc.served[i])
				}
			}
			holder := p.NewAccount()
			if !holder.Take(100) {
				t.Fatal("the holder's take of the whole pool was not granted")
			}
			for i, need := range tc.need {
				if accounts[i].Take(need) {
					t.Fatalf("account %d granted while the pool is spent", i)
				}
			}
			for step, give := range tc.gives {
				p.Give(give)
				var got []int
				for i, a := range accounts {
					if granted(a) {
						got = append(got, i)
					}
				}
				if len(got) != len(tc.want[step]) || len(got) > 0 && !equalInts(got, tc.want[step]) {
					t.Fatalf("give %d (%d units): granted %v, want %v", step, give, got, tc.want[step])
				}
			}
			if p.Used() > 100 {
				t.Fatalf("%d units taken of 100", p.Used())
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A take less served than every waiter is granted at once when it fits;
// a more served one waits behind them, although it would fit.
func TestFairPoolNewcomerTakesItsPlace(t *testing.T) {
	p := NewFairPool(100, time.Second, stoppedClock)
	quiet, heavy := p.NewAccount(), p.NewAccount()
	heavy.Take(90)
	p.Give(90)
	holder := p.NewAccount() // starts at heavy's service
	if !holder.Take(70) {
		t.Fatal("take into an empty pool not granted")
	}
	if heavy.Take(50) {
		t.Fatal("take beyond the pool granted")
	}
	if !quiet.Take(20) {
		t.Fatal("the least served take did not go ahead of the waiter")
	}
	if holder.Take(10) {
		t.Fatal("a more served take went ahead of the waiter")
	}
	if p.Waiting() != 2 {
		t.Fatalf("%d waiting, want heavy and holder", p.Waiting())
	}
	p.Give(70)
	if !granted(heavy) || !granted(holder) {
		t.Fatal("the waiters were not granted the units given back")
	}
}

// Cancel withdraws a waiting take, lets those behind a withdrawn head
// through, and reports a take granted meanwhile, whose units the caller
// then holds.
func TestFairPoolCancel(t *testing.T) {
	p := NewFairPool(100, time.Second, stoppedClock)
	holder, big, small := p.NewAccount(), p.NewAccount(), p.NewAccount()
	holder.Take(60)
	if big.Take(100) || small.Take(30) {
		t.Fatal("granted beyond the pool")
	}
	if big.Cancel() {
		t.Fatal("a waiting take reported granted")
	}
	if !granted(small) {
		t.Fatal("the take behind a withdrawn head was not granted")
	}
	if small.Take(20) {
		t.Fatal("granted beyond the pool")
	}
	p.Give(60) // small's second take is granted, its token not yet received
	if !small.Cancel() {
		t.Fatal("a take granted meanwhile reported withdrawn")
	}
	if got := p.Used(); got != 50 {
		t.Fatalf("%d units taken, want small's 30+20", got)
	}
}

// Under concurrent takes, gives and cancels the pool never grants beyond
// its limit, and every take is either granted or withdrawn: nobody is
// left waiting for units already given back.
func TestFairPoolNoLostWakeups(t *testing.T) {
	const (
		limit    = 1000
		accounts = 16
		rounds   = 400
	)
	p := NewFairPool(limit, time.Millisecond, WallClock(time.Now))
	var held atomic.Int64
	var wg sync.WaitGroup
	for i := range accounts {
		a := p.NewAccount()
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		wg.Go(func() {
			for range rounds {
				n := 1 + rng.Int64N(limit/3)
				switch {
				case a.Take(n):
				case rng.IntN(4) == 0:
					if !a.Cancel() {
						continue // withdrawn
					}
				case !testtime.Poll(10*time.Second, func() bool { return granted(a) }):
					t.Error("a waiting take was never granted")
					return
				}
				if got := held.Add(n); got > limit {
					t.Errorf("%d units held, limit %d", got, limit)
				}
				held.Add(-n)
				p.Give(n)
			}
		})
	}
	wg.Wait()
	if p.Used() != 0 || p.Waiting() != 0 {
		t.Fatalf("%d units taken, %d waiting after everything was given back", p.Used(), p.Waiting())
	}
}
