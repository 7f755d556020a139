package headers

import "github.com/btcsuite/btcd/chainhash/v2"

// locatorDense is how many entries Bitcoin Core's locator holds before it
// starts doubling the step; together with the doubling rule below it yields
// the tip and the 11 blocks below it one by one, then steps of 2, 4, 8, ...
const locatorDense = 10

// LocatorHeights returns the heights of the block locator Bitcoin Core builds
// for a chain whose tip is at height tip (CChain::GetLocator /
// LocatorEntries): tip, tip-1, ..., tip-11, then steps back that double each
// time (tip-13, tip-17, tip-25, ...), always ending with genesis (0). Heights
// are strictly decreasing.
func LocatorHeights(tip uint32) []uint32 {
	out := make([]uint32, 0, 12+bitLen(tip))
	h, step := tip, uint32(1)
	for {
		out = append(out, h)
		if h == 0 {
			return out
		}
		if h > step {
			h -= step
		} else {
			h = 0
		}
		// Core doubles after the step is taken, once more than
		// locatorDense entries are in; mirroring it keeps byte-for-byte
		// identical getheaders requests.
		if len(out) > locatorDense && step < 1<<31 {
			step *= 2
		}
	}
}

// bitLen is the number of bits needed to write x; it bounds how many doubling
// steps a locator for tip x can take.
func bitLen(x uint32) int {
	n := 0
	for ; x != 0; x >>= 1 {
		n++
	}
	return n
}

// LocateFork answers the start point of a getheaders/getblocks request the
// way Bitcoin Core does (FindForkInGlobalIndex): it returns the height of the
// first hash in locator that heightOf reports as part of our active chain,
// and 0 (genesis) when none is, including for an empty locator.
//
// heightOf must report ok only for blocks on the active chain; blocks we know
// only on a stale branch must report false so the walk continues down the
// locator to a common ancestor. The locator is trusted to be ordered tip
// first but nothing depends on that: it is walked in the order given, once.
// Callers bound its length (Core disconnects peers sending more than 101).
func LocateFork(locator []chainhash.Hash, heightOf func(chainhash.Hash) (uint32, bool)) uint32 {
	for _, hash := range locator {
		if h, ok := heightOf(hash); ok {
			return h
		}
	}
	return 0
}
