package bitcoind

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/corefixture"
)

func TestPollerEmitsOnChange(t *testing.T) {
	fx := corefixture.Load(t)
	c, srv := newFixtureClient(t, fx, corefixture.Options{})
	ctx := testCtx(t)
	p := NewPoller(c, 5*time.Millisecond, testLogger(t))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	if h := nextHint(t, ctx, p.Hints()); h.Hash != fx.Tip {
		t.Fatalf("first hint %s, want tip %s", h.Hash, fx.Tip)
	}
	// A reorg back to the fork point: the best hash changes once.
	fork, _ := fx.ActiveHash(112)
	srv.SetBestBlockHash(fork)
	if h := nextHint(t, ctx, p.Hints()); h.Hash != fork {
		t.Fatalf("hint %s, want %s", h.Hash, fork)
	}
	// Node down for a while, then back with the same tip: no hint.
	srv.SetWarmup(true)
	waitCalls(t, ctx, srv, "getbestblockhash", srv.Calls("getbestblockhash")+3)
	srv.SetWarmup(false)
	waitCalls(t, ctx, srv, "getbestblockhash", srv.Calls("getbestblockhash")+3)
	select {
	case h := <-p.Hints():
		t.Fatalf("unexpected hint %+v", h)
	default:
	}
}

func waitCalls(t *testing.T, ctx context.Context, srv *corefixture.Server, method string, n int) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for srv.Calls(method) < n {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %d %s calls: %v", n, method, ctx.Err())
		case <-tick.C:
		}
	}
}

func TestBackoff(t *testing.T) {
	b := NewBackoff(100*time.Millisecond, time.Second, rand.New(rand.NewPCG(7, 7)))
	ceil := []time.Duration{100, 200, 400, 800, 1000, 1000, 1000}
	for i, c := range ceil {
		c *= time.Millisecond
		d := b.Next()
		if d < c/2 || d >= c {
			t.Fatalf("attempt %d: %s not in [%s, %s)", i, d, c/2, c)
		}
	}
	b.Reset()
	if d := b.Next(); d >= 100*time.Millisecond {
		t.Fatalf("after Reset: %s", d)
	}
	// Same seed, same sequence.
	x := NewBackoff(time.Millisecond, time.Hour, rand.New(rand.NewPCG(1, 1)))
	y := NewBackoff(time.Millisecond, time.Hour, rand.New(rand.NewPCG(1, 1)))
	for range 80 {
		if x.Next() != y.Next() {
			t.Fatal("not deterministic")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := NewBackoff(time.Hour, time.Hour, nil).Wait(ctx); err == nil {
		t.Fatal("Wait ignored a cancelled context")
	}
}
