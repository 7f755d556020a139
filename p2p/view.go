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

// ChainView is the read side of the filter store that the server needs. Every
// block it reports has its filter committed; a block the node has but whose
// filter is not yet written must not be visible here.
//
// Methods return ErrNotFound (possibly wrapped) for an unknown hash or a
// height above the tip; any other error is a failure of the view, one
// wrapping ErrCorrupt when its data is damaged. All
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
	// Headers returns the active-chain headers of heights start..end
	// inclusive, or the first of them, up to a block whose stored header
	// is damaged (answered as a block not known yet).
	Headers(start, end uint32) ([]wire.BlockHeader, error)
	// AppendBlockHashes returns dst with the hashes of the blocks at
	// heights start..height(stop) on the chain that ends at stop (active or
	// stale) appended, in height order, read from one snapshot: the blocks
	// a getcfilters answer covers. On error dst is returned unchanged.
	AppendBlockHashes(dst []chainhash.Hash, stop chainhash.Hash, start uint32) ([]chainhash.Hash, error)
	// EachFilter calls fn with the BIP-158 filters (wire form: CompactSize
	// N, then the GCS stream, exactly what a cfilter carries) of the blocks
	// hashes[0], hashes[1], ... at heights start, start+1, ..., in order,
	// each with the P2P message checksum of the cfilter carrying it (the
	// first 4 bytes of dSHA256 of the payload: filter type 0, block hash,
	// CompactSize length, filter; see wireframe.CFilterHasher), until fn
	// returns more=false or an error; it returns how many fn got. The
	// checksum is kept beside the filter, not computed per call.
	// The blocks are an AppendBlockHashes answer (or part of one), and the
	// filters are theirs whatever reorgs happened since, so an answer
	// streamed in several calls is the one snapshot's. filter is valid only
	// during fn, which must not modify or keep it; fn should be quick (a
	// read of the store may be open), so it must not wait for a peer.
	EachFilter(start uint32, hashes []chainhash.Hash, fn func(i int, filter []byte, checksum [4]byte) (more bool, err error)) (int, error)
	// AppendFilterHashes returns a cfheaders answer without reading
	// filters: the filter header of the block at start-1 on the chain that
	// ends at stop (the zero hash for start 0), and dst with the filter
	// hashes (dSHA256 of each filter, 32 bytes each in internal byte order)
	// of heights start..height(stop) on that chain appended, in height
	// order, read from one snapshot. On error dst is returned unchanged.
	AppendFilterHashes(dst []byte, stop chainhash.Hash, start uint32) (prevHeader chainhash.Hash, out []byte, err error)
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
	// RelayTransaction passes raw, a transaction serialised with its
	// witnesses as the peer sent it, to the node. It returns the txid the
	// node accepted, or the node's reason for refusing it as an error.
	RelayTransaction(ctx context.Context, raw []byte) (chainhash.Hash, error)
}
