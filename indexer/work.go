package indexer

import (
	"fmt"
	"math/big"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/store"
)

// Chain work decides which of two branches a light client keeps: neutrino
// (blockmanager.go) sums the work of each branch above the fork and drops
// a peer that offers less than the branch it has, so the follower compares
// the same sums before it moves the store to another branch. The formula
// is the consensus one, work = 2^256 / (target + 1). It is written out
// here rather than taken from btcd's blockchain package, which would pull
// a database and a script engine into the daemon for one function.

// twoTo256 is 2^256.
var twoTo256 = new(big.Int).Lsh(big.NewInt(1), 256)

// blockWork returns the expected number of hashes needed to find a block
// whose header has the compact target bits. A target that is zero or
// negative (no valid block has one) counts as no work.
func blockWork(bits uint32) *big.Int {
	mantissa := int64(bits & 0x007fffff)
	exponent := uint(bits >> 24)
	if mantissa == 0 || bits&0x00800000 != 0 {
		return new(big.Int)
	}
	target := big.NewInt(mantissa)
	if exponent <= 3 {
		target.Rsh(target, 8*(3-exponent))
	} else {
		target.Lsh(target, 8*(exponent-3))
	}
	if target.Sign() == 0 {
		return new(big.Int)
	}
	return target.Div(twoTo256, target.Add(target, big.NewInt(1)))
}

// addWork adds the work of hdr to sum.
func addWork(sum *big.Int, hdr *wire.BlockHeader) {
	sum.Add(sum, blockWork(hdr.Bits))
}

// headerSource reads stored headers by height range.
type headerSource interface {
	Headers(start, end uint32) ([]wire.BlockHeader, error)
}

// storedWork sums the work of the stored active blocks at heights
// from..to inclusive, reading at most store.MaxRange headers at a time.
func storedWork(hs headerSource, from, to uint32) (*big.Int, error) {
	sum := new(big.Int)
	for a := uint64(from); a <= uint64(to); a += store.MaxRange {
		b := min(a+store.MaxRange-1, uint64(to))
		hdrs, err := hs.Headers(uint32(a), uint32(b))
		if err != nil {
			return nil, fmt.Errorf("headers %d..%d: %w", a, b, err)
		}
		for i := range hdrs {
			addWork(sum, &hdrs[i])
		}
	}
	return sum, nil
}
