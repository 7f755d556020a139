package blockproxy

import (
	"context"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// A recent block's first decoding is shared work (charged to no peer), a
// decoding again after it was evicted is the asking peer's, and a
// historical block's decoding is always the asking peer's.
func TestRecentBlockFirstDecodingShared(t *testing.T) {
	blks := testBlocks(6, 30, 41)
	const recentN = 3
	recentBlk, historical := blks[len(blks)-1], blks[0]
	cost := decodedBlockCost(recentBlk)
	// The cache holds one block: each Get evicts the one before.
	proxy := New(newMapNode(blks), NewGate(2, nil), 1<<30, testPVer).WithRecency(recencyOf(blks, recentN))
	cache := NewDecodedCache(proxy, cost*3/2, fixedNow)
	peer := Requester{Group: 1, Peer: 1}
	for i, step := range []struct {
		name       string
		blk        *wire.MsgBlock
		wantShared bool
	}{
		{"a recent block, first decoding", recentBlk, true},
		{"the same block, cached", recentBlk, false}, // no decoding: no work asked
		{"a historical block", historical, false},
		{"the recent block again, evicted meanwhile", recentBlk, false},
		{"the historical block again", historical, false},
		{"another recent block, first decoding", blks[len(blks)-2], true},
	} {
		var calls []bool
		work := func(_ context.Context, shared bool) (func(), error) {
			calls = append(calls, shared)
			return func() {}, nil
		}
		b, err := cache.Get(context.Background(), peer, step.blk.BlockHash(), work)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		cache.Release(b)
		switch {
		case i == 1 && len(calls) != 0:
			t.Fatalf("%s: decoded again (%v)", step.name, calls)
		case i != 1 && (len(calls) != 1 || calls[0] != step.wantShared):
			t.Fatalf("%s: work asked as shared %v, want one decoding with shared %v", step.name, calls, step.wantShared)
		}
	}
}

// Shared decodings are bounded: blocks no longer recent are forgotten
// once the record is full, and a recent block is decoded for every peer
// at most once while it stays recorded.
func TestDecodedRecentBounded(t *testing.T) {
	blks := testBlocks(4, 10, 43)
	recent := true
	proxy := New(newMapNode(blks), NewGate(2, nil), 1<<30, testPVer).WithRecency(func(h chainhash.Hash) (uint32, bool) { return 0, recent })
	cache := NewDecodedCache(proxy, 64<<20, fixedNow)
	for i := range maxDecodedRecent {
		var h chainhash.Hash
		h[0], h[1] = byte(i), byte(i>>8)
		cache.markDecoded(h)
	}
	if cache.firstDecoding(blks[0].BlockHash()) {
		t.Fatal("a first decoding shared while the record is full of recent blocks")
	}
	recent = false
	if !cache.firstDecoding(blks[0].BlockHash()) || len(cache.decodedRecent) != 0 {
		t.Fatalf("blocks no longer recent not forgotten: %d recorded", len(cache.decodedRecent))
	}
}
