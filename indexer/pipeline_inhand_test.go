package indexer

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/prevouts"
)

// heldSource is prefixSource whose every call holds its blocks for a
// while, as a slow fetch does, and which keeps the most calls it had in
// progress at once. Like the txindex source it waits for the run's turn
// and ends it only with the run's last block.
type heldSource struct {
	prefixSource
	hold      time.Duration
	now, peak atomic.Int64
}

// FetchBlocks implements runSource.
func (s *heldSource) FetchBlocks(ctx context.Context, hashes []chainhash.Hash, turn *prevouts.RunTurn) ([]prevouts.FetchedBlock, error) {
	n := s.now.Add(1)
	defer s.now.Add(-1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	select {
	case <-time.After(s.hold):
	case <-ctx.Done():
		turn.Done()
		return nil, ctx.Err()
	}
	if err := turn.Wait(ctx); err != nil {
		return nil, err
	}
	out, err := s.prefixSource.FetchBlocks(ctx, hashes, nil)
	if err != nil || len(out) == len(hashes) {
		turn.Done()
	}
	return out, err
}

// While a round builds silent-payment data, its eight workers hold at
// most Config.SPRunsInHand runs at once; without the index they all
// fetch at once. Either way the store (and the index) end equal to the
// chain.
func TestFollowerBoundsRunsInHandWithSilentPayments(t *testing.T) {
	tests := []struct {
		name     string
		sp       bool
		inHand   int
		min, max int64
	}{
		{name: "index on", sp: true, inHand: 2, min: 1, max: 2},
		{name: "index on, one run", sp: true, inHand: 1, min: 1, max: 1},
		{name: "index off", sp: false, inHand: 2, min: 3, max: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(2*time.Minute))
			defer cancel()
			c := newFakeChain(29)
			c.mine(300)
			st := openStore(t, c.genesis())
			cfg := Config{Genesis: c.genesis(), Workers: 8, SPRunsInHand: tt.inHand, BatchBlocks: 50}
			if tt.sp {
				cfg.SilentPayments = st.SilentPayments()
				if _, err := cfg.SilentPayments.Enable(1); err != nil {
					t.Fatal(err)
				}
			}
			src := &heldSource{prefixSource: prefixSource{fakeChain: c}, hold: 20 * time.Millisecond}
			f := NewFollower(cfg, runNode{c}, src, st, nil, nil, zerolog.Nop())
			if err := f.checkNetwork(ctx); err != nil {
				t.Fatal(err)
			}
			if err := f.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			checkStoreEqualsChain(t, st, c)
			if tt.sp {
				checkSPIndex(t, cfg.SilentPayments, fakeSPEntries(t, c))
			}
			if p := src.peak.Load(); p < tt.min || p > tt.max {
				t.Errorf("at most %d fetches at once; want %d..%d", p, tt.min, tt.max)
			}
		})
	}
}
