package corerest

import (
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Chain is what the endpoints read: the filter store's active chain and
// the filters it still keeps of stale blocks. Every method must be safe for
// concurrent use and never return slices that alias memory the
// implementation may later change. An error is answered 500 (Serve's
// internalError); what the chain does not hold is not an error.
type Chain interface {
	// Filter returns the BIP-158 basic filter of the block hash, active or
	// stale, in wire form (CompactSize N, then the Golomb-coded set);
	// found is false for a block it does not hold.
	Filter(hash chainhash.Hash) (filter []byte, found bool, err error)
	// HashAt returns the hash of the active block at height; found is
	// false above the tip.
	HashAt(height uint32) (hash chainhash.Hash, found bool, err error)
	// FilterHeadersFrom returns the filter headers of the active chain
	// from the block hash upward, at most count of them (at most
	// MaxHeadersResults), all read from one committed state; none when
	// hash is unknown or not on the active chain, as in Core.
	FilterHeadersFrom(hash chainhash.Hash, count int) ([]chainhash.Hash, error)
	// HeadersFrom returns the block headers of the active chain as
	// FilterHeadersFrom returns the filter headers.
	HeadersFrom(hash chainhash.Hash, count int) ([]wire.BlockHeader, error)
}
