package indexer

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/prevouts"
)

// runNode is fakeChain with getblockhash batches, so the follower fetches
// runs.
type runNode struct{ *fakeChain }

// GetBlockHashes implements hashLister.
func (n runNode) GetBlockHashes(ctx context.Context, first, count uint32) ([]chainhash.Hash, error) {
	hashes := make([]chainhash.Hash, 0, count)
	for h := first; h < first+count; h++ {
		hash, err := n.GetBlockHash(ctx, int64(h))
		if err != nil {
			return nil, err
		}
		hashes = append(hashes, hash)
	}
	return hashes, nil
}

// prefixSource fetches runs but answers each call with at most two blocks,
// as a source bounding what a run holds does when blocks grow.
type prefixSource struct {
	*fakeChain
	calls, short atomic.Int64
}

// FetchBlocks implements runSource.
func (s *prefixSource) FetchBlocks(ctx context.Context, hashes []chainhash.Hash, turn *prevouts.RunTurn) ([]prevouts.FetchedBlock, error) {
	defer turn.Done()
	s.calls.Add(1)
	n := min(2, len(hashes))
	if n < len(hashes) {
		s.short.Add(1)
	}
	out := make([]prevouts.FetchedBlock, 0, n)
	for _, h := range hashes[:n] {
		blk, prev, err := s.FetchBlock(ctx, h)
		if err != nil {
			return nil, err
		}
		var raw bytes.Buffer
		if err := blk.Serialize(&raw); err != nil {
			return nil, err
		}
		var outs [][]byte
		for _, tx := range blk.Transactions {
			for _, o := range tx.TxOut {
				outs = append(outs, o.PkScript)
			}
		}
		out = append(out, prevouts.FetchedBlock{Header: blk.Header, Hash: h, OutputScripts: outs, PrevScripts: prev, Raw: raw.Bytes()})
	}
	return out, nil
}

// A source that returns only the first blocks of a run gets asked for the
// rest, and the store ends equal to the chain.
func TestFollowerFetchesTheRestOfShortRuns(t *testing.T) {
	c := newFakeChain(3)
	c.mine(300)
	st := openStore(t, c.genesis())
	src := &prefixSource{fakeChain: c}
	f := NewFollower(Config{Genesis: c.genesis(), Workers: 4, BatchBlocks: 50}, runNode{c}, src, st, nil, nil, zerolog.Nop())
	ctx := context.Background()
	if err := f.checkNetwork(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	checkStoreEqualsChain(t, st, c)
	if src.short.Load() == 0 || src.calls.Load() < 150 {
		t.Errorf("%d calls, %d answered short; want runs longer than two blocks cut", src.calls.Load(), src.short.Load())
	}
}
