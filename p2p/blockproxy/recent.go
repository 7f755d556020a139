package blockproxy

import (
	"container/list"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// Recency tells the caches which blocks to keep: whether a block is one
// of the active chain's most recent (what wallets syncing ask for, many
// peers the same blocks) and its height. The server answers from its view
// of the chain; it must be safe for concurrent use and is called without
// a cache's lock held.
type Recency func(hash chainhash.Hash) (height uint32, recent bool)

// cacheRank is where a cached block stands when bytes are needed.
type cacheRank struct {
	height uint32
	recent bool
}

// rankOf returns the rank of hash under r (nil: nothing is recent).
func rankOf(r Recency, hash chainhash.Hash) cacheRank {
	if r == nil {
		return cacheRank{}
	}
	h, ok := r(hash)
	return cacheRank{height: h, recent: ok}
}

// evictionVictim returns the element of order (front most recently used)
// whose block goes first: the least recently used block that is not
// recent, else the recent block of the lowest height (the least recently
// used of equals). So recent blocks form a protected segment: historical
// downloads, however many, churn only each other, and among recent blocks
// the newest stay, which a wallet reading the most recent blocks in a
// cycle longer than the cache holds finds (under LRU it would find none).
// nil for an empty list.
func evictionVictim(order *list.List, rank func(*list.Element) cacheRank) *list.Element {
	var oldest *list.Element
	var oldestHeight uint32
	for el := order.Back(); el != nil; el = el.Prev() {
		r := rank(el)
		if !r.recent {
			return el
		}
		if oldest == nil || r.height < oldestHeight {
			oldest, oldestHeight = el, r.height
		}
	}
	return oldest
}

// RecentBlocks is how many of the most recent blocks RecentWithin's
// Recency protects by default: a day of blocks, what a wallet that syncs
// daily asks for. The caches keep the highest of them that fit.
const RecentBlocks = 144

// RecentWithin returns the Recency of the n most recent blocks of a
// chain: tip returns its tip height (false: no chain yet), heightOf a
// block's height on the active chain (false: not on it).
func RecentWithin(n uint32, tip func() (uint32, bool), heightOf func(chainhash.Hash) (uint32, bool)) Recency {
	return func(hash chainhash.Hash) (uint32, bool) {
		top, ok := tip()
		if !ok {
			return 0, false
		}
		h, ok := heightOf(hash)
		return h, ok && h <= top && top-h < n
	}
}
