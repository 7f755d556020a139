package replica

import (
	"fmt"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/headers"
)

// rulesOf returns the difficulty rules of params.
func rulesOf(p *chaincfg.Params) *headers.DifficultyRules {
	return &headers.DifficultyRules{
		PowLimit: p.PowLimit, PowLimitBits: p.PowLimitBits,
		TargetTimespan: p.TargetTimespan, TargetTimePerBlock: p.TargetTimePerBlock,
		RetargetAdjustmentFactor: p.RetargetAdjustmentFactor,
		ReduceMinDifficulty:      p.ReduceMinDifficulty, MinDiffReductionTime: p.MinDiffReductionTime,
		NoRetargeting: p.PoWNoRetargeting, EnforceBIP94: p.EnforceBIP94,
	}
}

// headerChecker checks runs of new headers against a network's rules, with
// the headers below them read from the store.
type headerChecker struct {
	params *chaincfg.Params
	rules  *headers.DifficultyRules
	// below returns the stored header at a height below the run.
	below func(height uint32) (wire.BlockHeader, error)
}

func newHeaderChecker(params *chaincfg.Params, below func(uint32) (wire.BlockHeader, error)) *headerChecker {
	return &headerChecker{params: params, rules: rulesOf(params), below: below}
}

// check checks hdrs, at heights first, first+1, ...: the first links to
// prev (ignored at height 0, where the header must be the genesis
// block's), each links to the one before, meets the proof of work of its
// bits, and carries the bits the difficulty rules require. It returns the
// headers' hashes. Errors wrap ErrInvalidChain and give the height.
func (c *headerChecker) check(first uint32, prev chainhash.Hash, hdrs []wire.BlockHeader) ([]chainhash.Hash, error) {
	hashes := make([]chainhash.Hash, len(hdrs))
	at := func(h uint32) (headers.DifficultyHeader, error) {
		var hdr wire.BlockHeader
		if h >= first {
			hdr = hdrs[h-first]
		} else {
			var err error
			if hdr, err = c.below(h); err != nil {
				return headers.DifficultyHeader{}, fmt.Errorf("header %d: %w", h, err)
			}
		}
		return headers.DifficultyHeader{Bits: hdr.Bits, Timestamp: hdr.Timestamp.Unix()}, nil
	}
	for i := range hdrs {
		h := first + uint32(i)
		hashes[i] = hdrs[i].BlockHash()
		if h == 0 {
			if hashes[i] != *c.params.GenesisHash {
				return nil, fmt.Errorf("%w: height 0: block %s is not the genesis block %s", ErrInvalidChain, hashes[i], c.params.GenesisHash)
			}
			continue
		}
		want := prev
		if i > 0 {
			want = hashes[i-1]
		}
		if hdrs[i].PrevBlock != want {
			return nil, fmt.Errorf("%w: height %d: block %s has prev %s, want %s", ErrInvalidChain, h, hashes[i], hdrs[i].PrevBlock, want)
		}
		if err := headers.CheckProofOfWork(&hashes[i], hdrs[i].Bits, c.params.PowLimit); err != nil {
			return nil, fmt.Errorf("%w: height %d: %w", ErrInvalidChain, h, err)
		}
		bits, err := headers.NextBits(c.rules, h, hdrs[i].Timestamp.Unix(), at)
		if err != nil {
			return nil, fmt.Errorf("height %d: difficulty: %w", h, err)
		}
		if bits != hdrs[i].Bits {
			return nil, fmt.Errorf("%w: height %d: block %s: %w: bits %08x, want %08x", ErrInvalidChain, h, hashes[i], headers.ErrBadDifficulty, hdrs[i].Bits, bits)
		}
	}
	return hashes, nil
}

// chainFilters checks that filters chain from prevFilterHeader to want
// (one filter header per filter) and returns their filter hashes. Errors
// wrap ErrInvalidChain and give the height (first is the first filter's).
func chainFilters(first uint32, prevFilterHeader chainhash.Hash, filters [][]byte, want []chainhash.Hash) ([]chainhash.Hash, error) {
	if len(filters) != len(want) {
		return nil, fmt.Errorf("%w: %d filters for %d filter headers", ErrInvalidChain, len(filters), len(want))
	}
	hashes := make([]chainhash.Hash, len(filters))
	prev := prevFilterHeader
	for i, f := range filters {
		hashes[i] = headers.FilterHash(f)
		got := headers.FilterHeaderFromHash(hashes[i], prev)
		if got != want[i] {
			return nil, fmt.Errorf("%w: height %d: the filter chains to filter header %s, want %s", ErrInvalidChain, first+uint32(i), got, want[i])
		}
		prev = got
	}
	return hashes, nil
}

// chainFilterHashes checks each filter against the filter hash a peer sent
// for it (cfheaders carries filter hashes) and returns the filter headers
// chained from prevFilterHeader. Errors wrap ErrInvalidChain and give the
// height (first is the first filter's).
func chainFilterHashes(first uint32, prevFilterHeader chainhash.Hash, filters [][]byte, filterHashes []chainhash.Hash) ([]chainhash.Hash, error) {
	if len(filters) != len(filterHashes) {
		return nil, fmt.Errorf("%w: %d filters for %d filter hashes", ErrInvalidChain, len(filters), len(filterHashes))
	}
	out := make([]chainhash.Hash, len(filters))
	prev := prevFilterHeader
	for i, f := range filters {
		if got := headers.FilterHash(f); got != filterHashes[i] {
			return nil, fmt.Errorf("%w: height %d: the filter hashes to %s, cfheaders says %s", ErrInvalidChain, first+uint32(i), got, filterHashes[i])
		}
		prev = headers.FilterHeaderFromHash(filterHashes[i], prev)
		out[i] = prev
	}
	return out, nil
}
