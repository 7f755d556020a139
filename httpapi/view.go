package httpapi

import (
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// MaxRange is the most heights one range read of a ChainReader must
// answer (the filter store's own limit).
const MaxRange = 2000

// Tip is the highest indexed block of the active chain.
type Tip struct {
	Height       uint32
	Hash         chainhash.Hash
	FilterHeader chainhash.Hash
}

// BlockRecord is one indexed block with its filter.
type BlockRecord struct {
	Height       uint32
	Hash         chainhash.Hash
	Header       wire.BlockHeader
	Filter       []byte // BIP-158 wire form: CompactSize N, then the Golomb-coded set
	FilterHeader chainhash.Hash
	FilterHash   chainhash.Hash // dSHA256(Filter)
}

// ChainReader reads the filter store. Every method must be safe for
// concurrent use, return errors wrapping ErrNotFound for heights or hashes
// it does not hold, and never return slices that alias memory the
// implementation may later change.
type ChainReader interface {
	// Tip returns the highest indexed block of the active chain; false on
	// an empty index.
	Tip() (Tip, bool)
	// HashAt returns the hash of the active block at height.
	HashAt(height uint32) (chainhash.Hash, error)
	// HeightOf returns the height of hash and whether it is on the active
	// chain (false: a stale block whose filter is still kept).
	HeightOf(hash chainhash.Hash) (uint32, bool, error)
	// HeaderAt returns the header of the active block at height.
	HeaderAt(height uint32) (wire.BlockHeader, error)
	// Headers returns the active block headers at start..end inclusive (at
	// most MaxRange of them), or the first of them, up to a block whose
	// stored header is damaged (answered as a block the node lacks).
	Headers(start, end uint32) ([]wire.BlockHeader, error)
	// FilterByHash returns the record of hash, active or stale.
	FilterByHash(hash chainhash.Hash) (BlockRecord, bool, error)
	// FiltersByHeight returns the active records at start..end inclusive
	// (at most MaxRange of them).
	FiltersByHeight(start, end uint32) ([]BlockRecord, error)
	// FilterHeadersByHeight returns the active filter headers at
	// start..end inclusive (at most MaxRange of them).
	FilterHeadersByHeight(start, end uint32) ([]chainhash.Hash, error)
}

// ChainView is the read-only part of the filter store the HTTP server
// needs; the daemon adapts the store to it, tests use an in-memory fake.
//
// Its own ChainReader methods may each see a different state (the indexer
// commits between two calls). A request whose answer takes more than one
// read goes through Read, whose reader answers every call from the same
// committed state, so an answer never mixes two states and never fails
// because the chain moved between two of its reads.
type ChainView interface {
	ChainReader
	// Read runs fn with a reader of one committed state and returns fn's
	// error. fn must not block on the network: a slow client must never
	// hold the state open.
	Read(fn func(ChainReader) error) error
	// SizeBytes returns the size of the store on disk.
	SizeBytes() int64
}
