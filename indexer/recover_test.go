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
