package httpapi

import (
	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/rangefile"
)

// SPTweak is one transaction's tweak input_hash·A and the largest value
// among its taproot outputs, which the dust levels compare.
type SPTweak = rangefile.Tweak

// SPBlock is one block's entry in the silent-payment index
// (docs/silent-payments.md). A read fills in the parts it was asked for.
type SPBlock struct {
	Height    uint32
	BlockHash chainhash.Hash
	// TweakData is the block's tweak data, Tweaks the same parsed.
	TweakData []byte
	Tweaks    []SPTweak
	// Filter is the block's taproot filter in BIP-158 wire form.
	Filter []byte
	// Header is the block's commitment header.
	Header, TweakHash, FilterHash chainhash.Hash
}

// SPState is how far the silent-payment index reaches: Start..Next-1.
type SPState struct{ Start, Next uint32 }

// SPIndex reads the silent-payment index. Every method must be safe for
// concurrent use, return errors wrapping ErrNotFound outside the indexed
// heights, answer each call from one committed state, and never return
// slices that alias memory the implementation may later change. Ranges
// hold at most MaxRange heights.
type SPIndex interface {
	// SPState returns the indexed heights.
	SPState() SPState
	// SPTweaks returns the tweak data (TweakData and Tweaks) and the
	// commitment header of start..end inclusive.
	SPTweaks(start, end uint32) ([]SPBlock, error)
	// SPFilters returns the taproot filters and the commitment headers of
	// start..end inclusive.
	SPFilters(start, end uint32) ([]SPBlock, error)
	// SPHeaders returns the commitment headers of start..end inclusive
	// (Header, TweakHash and FilterHash).
	SPHeaders(start, end uint32) ([]SPBlock, error)
	// SPCheckpoints returns the commitment headers at every multiple of
	// SPCheckpointInterval from Start up to the height of stop, an indexed
	// active block.
	SPCheckpoints(stop chainhash.Hash) ([]SPBlock, error)
}

// SPCheckpointInterval is the distance between two commitment checkpoints.
const SPCheckpointInterval = 1000
