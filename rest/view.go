package rest

import (
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/store"
)

// ChainView is the read-only part of the filter store the HTTP server needs.
// *store.Store satisfies it; tests use an in-memory fake. Every method must
// be safe for concurrent use, return errors wrapping store.ErrNotFound for
// heights or hashes it does not hold, and never return slices that alias
// memory the implementation may later change.
type ChainView interface {
	// Tip returns the highest indexed block of the active chain; false on
	// an empty index.
	Tip() (store.Tip, bool)
	// HashAt returns the hash of the active block at height.
	HashAt(height uint32) (chainhash.Hash, error)
	// HeightOf returns the height of hash and whether it is on the active
	// chain (false: a stale block whose filter is still kept).
	HeightOf(hash chainhash.Hash) (uint32, bool, error)
	// Headers returns the active block headers at start..end inclusive (at
	// most store.MaxRange of them).
	Headers(start, end uint32) ([]wire.BlockHeader, error)
	// FilterByHash returns the record of hash, active or stale.
	FilterByHash(hash chainhash.Hash) (store.BlockRecord, bool, error)
	// FiltersByHeight returns the active records at start..end inclusive
	// (at most store.MaxRange of them).
	FiltersByHeight(start, end uint32) ([]store.BlockRecord, error)
	// FilterHeadersByHeight returns the active filter headers at
	// start..end inclusive (at most store.MaxRange of them).
	FilterHeadersByHeight(start, end uint32) ([]chainhash.Hash, error)
	// SizeBytes returns the size of the store on disk.
	SizeBytes() int64
}

// The real store must keep satisfying the view.
var _ ChainView = (*store.Store)(nil)
