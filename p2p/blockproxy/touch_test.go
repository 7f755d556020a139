package blockproxy

import (
	"context"
	"testing"
)

// Touch tells whether a block is cached without pinning it, and makes it
// the most recently used: of two cached blocks, the one touched stays when
// a third needs the room.
func TestTouchKeepsTheBlockWithoutAPin(t *testing.T) {
	blks := testBlocks(3, 30, 7)
	peer := Requester{Group: 1, Peer: 1}
	// The three blocks, as the cache counts them, do not fit: the third
	// evicts one.
	var all int64
	big := NewDecodedCache(New(newMapNode(blks), NewGate(2, nil), 1<<30, testPVer), 1<<30, fixedNow)
	for _, blk := range blks {
		b, err := big.Get(context.Background(), peer, blk.BlockHash(), noWork)
		if err != nil {
			t.Fatal(err)
		}
		all += b.cost
		big.Release(b)
	}
	cache := NewDecodedCache(New(newMapNode(blks), NewGate(2, nil), 1<<30, testPVer), all-1, fixedNow)
	get := func(i int) {
		t.Helper()
		b, err := cache.Get(context.Background(), peer, blks[i].BlockHash(), noWork)
		if err != nil {
			t.Fatal(err)
		}
		cache.Release(b)
	}
	if cache.Touch(blks[0].BlockHash()) {
		t.Fatal("a block never asked for is cached")
	}
	get(0)
	get(1)
	if !cache.Touch(blks[0].BlockHash()) {
		t.Fatal("block 0 not cached")
	}
	if n := cache.Pinned(); n != 0 {
		t.Fatalf("Touch left %d pins", n)
	}
	get(2) // evicts the least recently used: block 1, not the touched 0
	if !cache.Touch(blks[0].BlockHash()) || cache.Touch(blks[1].BlockHash()) || !cache.Touch(blks[2].BlockHash()) {
		t.Fatalf("cached after the third block: 0 %v, 1 %v, 2 %v", cache.Touch(blks[0].BlockHash()),
			cache.Touch(blks[1].BlockHash()), cache.Touch(blks[2].BlockHash()))
	}
}
