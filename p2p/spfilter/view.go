package spfilter

import (
	"errors"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// ErrNotFound is wrapped by View errors for heights the index does not
// cover (not yet indexed, below its first height, no longer on the active
// chain), and by Server errors for answers a reorg overtook: the request
// is ignored.
var ErrNotFound = errors.New("not in the silent-payment index")

// Block is one block's silent-payment data.
type Block struct {
	BlockHash chainhash.Hash
	// TweakData is the block's tweak data (docs/silent-payments.md,
	// section 2).
	TweakData []byte
	// Filter is its taproot filter in BIP-158 wire form (section 3).
	Filter []byte
}

// Header is one block's entry of the commitment chain (section 4).
type Header struct {
	Height     uint32
	BlockHash  chainhash.Hash
	Header     chainhash.Hash
	Commitment chainhash.Hash
}

// View is the read side of the silent-payment index that Server needs.
// Methods fail with an error wrapping ErrNotFound for heights or blocks
// the index does not cover; any other error is a failure of the view.
// All methods must be safe for concurrent use.
type View interface {
	// Range returns the heights of the active chain the index covers,
	// start..next-1 (none when next == start).
	Range() (start, next uint32)
	// Block returns the data of the active block at height, read from one
	// snapshot; the slices are the caller's.
	Block(height uint32) (Block, error)
	// Headers returns the entries of active heights start..end inclusive
	// (at most MaxGetCFHeaders), in height order, read from one snapshot.
	Headers(start, end uint32) ([]Header, error)
	// Checkpoints returns the entries at every multiple of
	// CheckpointInterval from the index's first height up to the height
	// of stop, an active block the index covers, in height order, read
	// from one snapshot.
	Checkpoints(stop chainhash.Hash) ([]Header, error)
}

// BIP-157's limits, which this type keeps.
const (
	// MaxGetCFHeaders is the most blocks one cfheaders answer covers.
	MaxGetCFHeaders = 2000
	// CheckpointInterval is the spacing of cfcheckpt's headers.
	CheckpointInterval = 1000
)
