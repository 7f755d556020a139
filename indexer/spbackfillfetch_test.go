package indexer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/prevouts"
)

// orderedRunSource is prefixSource that keeps each run's turn, as the
// txindex source does, until the run's last block is delivered, and
// records the height of the first block of every call once the turn has
// come: the order in which a script cache would learn the blocks.
type orderedRunSource struct {
	prefixSource
	mu     sync.Mutex
	height map[chainhash.Hash]uint32
	seen   []uint32
}

// FetchBlocks implements runSource.
func (s *orderedRunSource) FetchBlocks(ctx context.Context, hashes []chainhash.Hash, turn *prevouts.RunTurn) ([]prevouts.FetchedBlock, error) {
	if err := turn.Wait(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.seen = append(s.seen, s.height[hashes[0]])
	s.mu.Unlock()
	// prefixSource ends the turn after every call; hand it a turn of its
	// own and end this one only with the run's last block.
	out, err := s.prefixSource.FetchBlocks(ctx, hashes, nil)
	if err != nil || len(out) == len(hashes) {
		turn.Done()
	}
	return out, err
}

// TestSPBackfillFetchesRuns: from a source that fetches runs (and answers
// with the first two blocks of each only), the backfill asks for runs in
// chain order, each after the one before it was delivered whole, fetches
// the rest of every cut run, and builds the index equal to one built
// from scratch.
func TestSPBackfillFetchesRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(2*time.Minute))
	defer cancel()
	c := newFakeChain(23)
	c.mine(300)
	st := openStore(t, c.genesis())
	if err := testFollower(c, st, Config{BatchBlocks: 64}).Sync(ctx); err != nil {
		t.Fatal(err)
	}
	src := &orderedRunSource{prefixSource: prefixSource{fakeChain: c}, height: map[chainhash.Hash]uint32{}}
	for h, hash := range c.active {
		src.height[hash] = uint32(h)
	}
	x := st.SilentPayments()
	if _, err := x.Enable(1); err != nil {
		t.Fatal(err)
	}
	runBackfill(t, NewSPBackfill(x, st, src, 4, nil, zerolog.Nop()))
	waitSPNext(t, x, func() uint32 { return 301 })
	checkSPIndex(t, x, fakeSPEntries(t, c))

	if src.short.Load() == 0 {
		t.Errorf("%d calls, none cut short; want runs longer than two blocks", src.calls.Load())
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if len(src.seen) == 0 || src.seen[0] != 1 {
		t.Fatalf("calls started at heights %v; want the first at 1", src.seen)
	}
	for i := 1; i < len(src.seen); i++ {
		if src.seen[i] <= src.seen[i-1] {
			t.Fatalf("call %d asked from height %d after a call from %d: runs out of chain order", i, src.seen[i], src.seen[i-1])
		}
	}
	if last := src.seen[len(src.seen)-1]; last > 300 || int(src.calls.Load()) != len(src.seen) {
		t.Fatalf("%d calls, %d recorded, last from height %d", src.calls.Load(), len(src.seen), last)
	}
}
