package p2p

import (
	"context"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Tip is the last block whose filter is committed.
type Tip struct {
	Height uint32
	Hash   chainhash.Hash
}

// FilterRecord is one block's BIP-158 basic filter as ChainView returns it.
type FilterRecord struct {
	Height uint32
	Hash   chainhash.Hash
	// Filter is the BIP-158 wire form (CompactSize N prefix + GCS stream),
	// exactly what a cfilter message carries. Handlers do not modify it.
	Filter []byte
}

// ChainView is the read side of the filter store that the server needs. Every
// block it reports has its filter committed; a block the node has but whose
// filter is not yet written must not be visible here.
//
// Methods return ErrNotFound (possibly wrapped) for an unknown hash or a
// height above the tip; any other error is a failure of the view. All
// methods must be safe for concurrent use.
type ChainView interface {
	// Tip returns the committed tip; false on an empty store.
	Tip() (Tip, bool)
	// TipChanged returns a channel closed after the next commit or rollback.
	TipChanged() <-chan struct{}
	// HeightOf returns the height of a known block and whether it is on the
	// active chain (false: on a stale branch the store kept).
	HeightOf(hash chainhash.Hash) (uint32, bool, error)
	// HeaderByHash returns the header and height of an active or stale block.
	HeaderByHash(hash chainhash.Hash) (wire.BlockHeader, uint32, error)
	// Headers returns the active-chain headers of heights start..end inclusive.
	Headers(start, end uint32) ([]wire.BlockHeader, error)
	// FiltersForStop returns the filters of heights start..height(stop) on
	// the chain that ends at stop (active or stale), in height order.
	FiltersForStop(stop chainhash.Hash, start uint32) ([]FilterRecord, error)
	// FilterHashesForStop returns a cfheaders answer without reading
	// filters: the filter header of the block at start-1 on the chain that
	// ends at stop (the zero hash for start 0) and the filter hashes
	// (dSHA256 of each filter) of heights start..height(stop) on that
	// chain, in height order, read from one snapshot.
	FilterHashesForStop(stop chainhash.Hash, start uint32) (prevHeader chainhash.Hash, hashes []chainhash.Hash, err error)
	// FilterHeaderCheckpoints returns the filter headers at heights
	// interval, 2·interval, ... ≤ height(stop) on the chain that ends at
	// stop (active or stale), in height order, read from one snapshot so
	// that a reorg cannot mix two chains into one answer.
	FilterHeaderCheckpoints(stop chainhash.Hash, interval uint32) ([]chainhash.Hash, error)
}

// BlockFetcher fetches a full block (with witnesses) from the node.
type BlockFetcher interface {
	// FetchBlock returns the block; an error wrapping ErrNotFound when the
	// node does not have it (pruned, unknown), any other error otherwise.
	// Either way the peer receives notfound for it.
	FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, error)
}

// TxRelayer hands a wallet's transaction to the node (sendrawtransaction).
type TxRelayer interface {
	// SendRawTransaction returns the txid the node accepted, or the node's
	// reason for refusing it as an error.
	SendRawTransaction(ctx context.Context, tx *wire.MsgTx) (chainhash.Hash, error)
}
