package indexer

import (
	"fmt"
	"math/big"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/store"
)

// Chain work decides which of two branches a light client keeps: neutrino
// (blockmanager.go) sums the work of each branch above the fork and drops
// a peer that offers less than the branch it has, so the follower compares
// the same sums (headers.Work) before it moves the store to another
// branch.

// addWork adds the work of hdr to sum.
func addWork(sum *big.Int, hdr *wire.BlockHeader) {
	sum.Add(sum, headers.Work(hdr.Bits))
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
