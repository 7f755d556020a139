package blockproxy

import (
	"container/list"
	"context"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// The victim when bytes are needed: the least recently used block that
// is not recent, else the recent block of the lowest height.
func TestEvictionVictim(t *testing.T) {
	old := func(h uint32) cacheRank { return cacheRank{height: h} }
	recent := func(h uint32) cacheRank { return cacheRank{height: h, recent: true} }
	for _, tc := range []struct {
		name string
		// ranks, front (most recently used) first.
		ranks []cacheRank
		want  int // index in ranks; −1: none
	}{
		{"empty", nil, -1},
		{"LRU among historical blocks", []cacheRank{old(5), old(9), old(7)}, 2},
		{"a historical block before any recent one", []cacheRank{old(3), recent(100), recent(99)}, 0},
		{"the lowest recent block when all are recent", []cacheRank{recent(98), recent(100), recent(99)}, 0},
		{"least recently used of equal heights", []cacheRank{recent(98), recent(98), recent(99)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := list.New()
			var els []*list.Element
			for i := range tc.ranks {
				els = append(els, l.PushBack(i))
			}
			got := evictionVictim(l, func(el *list.Element) cacheRank { return tc.ranks[el.Value.(int)] })
			switch {
			case tc.want < 0 && got != nil:
				t.Fatalf("victim %v, want none", got.Value)
			case tc.want >= 0 && got != els[tc.want]:
				t.Fatalf("victim %v, want %d", got, tc.want)
			}
		})
	}
}

// recencyOf is the Recency of a chain of blocks whose last recentN are
// recent.
func recencyOf(blks []*wire.MsgBlock, recentN int) Recency {
	heights := make(map[chainhash.Hash]uint32)
	for i, b := range blks {
		heights[b.BlockHash()] = uint32(i)
	}
	return RecentWithin(uint32(recentN), func() (uint32, bool) { return uint32(len(blks) - 1), true },
		func(h chainhash.Hash) (uint32, bool) { height, ok := heights[h]; return height, ok })
}

// Recent blocks stay cached, encoded and decoded, while many historical
// blocks are downloaded through the same caches once each; and when the
// recent blocks a wallet reads in a cycle do not all fit, the highest
// stay (LRU would keep none of them for the next cycle).
func TestCachesKeepRecentBlocks(t *testing.T) {
	blks := testBlocks(40, 30, 31)
	size := int64(len(encodeBlock(t, blks[0], wire.BaseEncoding)))
	cost := decodedBlockCost(blks[0])
	const recentN = 4
	recentBlks := blks[len(blks)-recentN:]
	for _, tc := range []struct {
		name string
		// fit is how many blocks each cache holds.
		fit int
		// wantKept are the recent blocks (index in recentBlks) still
		// cached after the historical downloads and a second cycle.
		wantKept []int
	}{
		{"all recent blocks fit", recentN + 1, []int{0, 1, 2, 3}},
		{"the highest recent blocks that fit", recentN - 1, []int{1, 2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := newMapNode(blks)
			proxy := New(node, NewGate(2, nil), int64(tc.fit)*size+size/2, testPVer).WithRecency(recencyOf(blks, recentN))
			decoded := NewDecodedCache(proxy, int64(tc.fit)*cost*5/4+cost/2, fixedNow)
			wallet, downloader := Requester{Group: 1, Peer: 1}, Requester{Group: 2, Peer: 2}
			ctx := context.Background()
			for range 2 { // two cycles of the wallet's window
				for _, blk := range recentBlks {
					b, err := decoded.Get(ctx, wallet, blk.BlockHash(), noWork)
					if err != nil {
						t.Fatal(err)
					}
					decoded.Release(b)
				}
				for _, blk := range blks[:len(blks)-recentN] {
					if _, err := proxy.Get(ctx, downloader, blk.BlockHash(), false); err != nil {
						t.Fatal(err)
					}
					b, err := decoded.Get(ctx, downloader, blk.BlockHash(), noWork)
					if err != nil {
						t.Fatal(err)
					}
					decoded.Release(b)
				}
			}
			for _, i := range tc.wantKept {
				h := recentBlks[i].BlockHash()
				if _, _, ok := proxy.peek(h); !ok {
					t.Errorf("recent block %d not in the encoded cache", i)
				}
				decoded.mu.Lock()
				_, ok := decoded.byHash[h]
				decoded.mu.Unlock()
				if !ok {
					t.Errorf("recent block %d not in the decoded cache", i)
				}
			}
		})
	}
}
