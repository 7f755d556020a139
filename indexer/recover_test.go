package indexer

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"
)

// panickingSource panics in a fetch worker after some blocks, as a
// decoder bug on a malformed block from the node would.
type panickingSource struct {
	*fakeChain
	calls atomic.Int32
}

func (p *panickingSource) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	if p.calls.Add(1) > 40 {
		panic("injected decoder panic")
	}
	return p.fakeChain.FetchBlock(ctx, hash)
}

// TestFollowerPanicEndsRun: a panic in one of the follower's goroutines
// ends Run with an error wrapping errPanic, instead of killing the process
// or being retried, and leaves the store at a committed tip.
func TestFollowerPanicEndsRun(t *testing.T) {
	c := newFakeChain(9)
	c.mine(200)
	st := openStore(t, c.genesis())
	src := &panickingSource{fakeChain: c}
	f := NewFollower(Config{Genesis: c.genesis(), Workers: 4, BatchBlocks: 16, PollInterval: 20 * time.Millisecond}, c, src, st, nil, nil, zerolog.Nop())
	done := make(chan error, 1)
	go func() { done <- f.Run(context.Background()) }()
	select {
	case err := <-done:
		if !errors.Is(err, errPanic) || !strings.Contains(err.Error(), "injected decoder panic") {
			t.Fatalf("Run: %v, want errPanic", err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("Run's error spans lines: %q", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run still running after a worker panicked")
	}
	if tip, ok := st.Tip(); ok && tip.Height >= 200 {
		t.Fatalf("store reached %d despite the panic", tip.Height)
	}
}

// stallingSource makes the fetch of one height (victim) end in a panic or
// an error only after the other workers have fetched every later height the
// pipeline's window lets them: the victim's height is then the one the
// committer waits for, the planner waits for a token that only that height
// would return, and every other worker waits for a job. This is the timing
// a loaded machine produces when the victim's goroutine is descheduled
// between taking its job and fetching, and in which a failed worker used to
// leave Run hanging: the workers' error only reached the round's context
// once every worker had returned, and the others never would.
type stallingSource struct {
	*fakeChain
	victim uint32
	window int   // heights the pipeline lets be in flight: Workers*4 for a source without runs
	fail   error // nil: panic
	height map[chainhash.Hash]uint32
	after  chan struct{} // one value per fetched height above the victim
}

func newStallingSource(c *fakeChain, victim uint32, window int, fail error) *stallingSource {
	s := &stallingSource{fakeChain: c, victim: victim, window: window, fail: fail, height: map[chainhash.Hash]uint32{}, after: make(chan struct{}, 1<<12)}
	for h, hash := range c.active {
		s.height[hash] = uint32(h)
	}
	return s
}

func (s *stallingSource) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	h := s.height[hash]
	switch {
	case h > s.victim:
		defer func() { s.after <- struct{}{} }()
	case h == s.victim:
		// Wait until the later heights of the window are fetched (or, should
		// the window shrink, for a while), then fail.
		timeout := time.After(2 * time.Second)
		for range s.window - 1 {
			select {
			case <-s.after:
			case <-timeout:
			}
		}
		if s.fail != nil {
			return nil, nil, s.fail
		}
		panic("injected decoder panic")
	}
	return s.fakeChain.FetchBlock(ctx, hash)
}

// TestFollowerPanicEndsRunWindowFull: a worker that panics while every
// other worker waits for a job (the pipeline's window is full behind the
// panicking worker's height) ends Run.
func TestFollowerPanicEndsRunWindowFull(t *testing.T) {
	c := newFakeChain(9)
	c.mine(200)
	st := openStore(t, c.genesis())
	const workers = 4
	src := newStallingSource(c, 50, workers*4, nil)
	f := NewFollower(Config{Genesis: c.genesis(), Workers: workers, BatchBlocks: 16, PollInterval: 20 * time.Millisecond}, c, src, st, nil, nil, zerolog.Nop())
	done := make(chan error, 1)
	go func() { done <- f.Run(context.Background()) }()
	select {
	case err := <-done:
		if !errors.Is(err, errPanic) || !strings.Contains(err.Error(), "injected decoder panic") {
			t.Fatalf("Run: %v, want errPanic", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run still running 10s after a worker panicked with the window full")
	}
	if tip, ok := st.Tip(); !ok || tip.Height != 49 {
		t.Fatalf("store tip %d (%v), want 49: the heights below the panic, none above", tip.Height, ok)
	}
}

// TestFollowerFetchErrorEndsRoundWindowFull: a worker's fetch error at the
// same timing ends the round with that error (Run then retries it) instead
// of leaving the round waiting for the failed worker's height.
func TestFollowerFetchErrorEndsRoundWindowFull(t *testing.T) {
	c := newFakeChain(9)
	c.mine(200)
	st := openStore(t, c.genesis())
	const workers = 4
	boom := errors.New("injected fetch error")
	src := newStallingSource(c, 50, workers*4, boom)
	f := NewFollower(Config{Genesis: c.genesis(), Workers: workers, BatchBlocks: 16}, c, src, st, nil, nil, zerolog.Nop())
	done := make(chan error, 1)
	go func() { done <- f.Sync(context.Background()) }()
	select {
	case err := <-done:
		if !errors.Is(err, boom) || isFatal(err) {
			t.Fatalf("Sync: %v, want the fetch error, not fatal", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sync still running 10s after a worker failed with the window full")
	}
	if tip, ok := st.Tip(); !ok || tip.Height != 49 {
		t.Fatalf("store tip %d (%v), want 49", tip.Height, ok)
	}
}
