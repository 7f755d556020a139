package p2p

import (
	"context"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/cfindexd/cfindexd/bitcoind"
)

// The node client relays transactions as it is.
var _ TxRelayer = (*bitcoind.Client)(nil)

// nodeBlocks adapts the node's RPC client to BlockFetcher.
type nodeBlocks struct{ c *bitcoind.Client }

// NewNodeBlockFetcher returns a BlockFetcher over the node's getblock. A
// block the node does not know or has pruned is ErrNotFound.
func NewNodeBlockFetcher(c *bitcoind.Client) BlockFetcher { return nodeBlocks{c} }

func (n nodeBlocks) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, error) {
	blk, err := n.c.GetRawBlock(ctx, hash)
	if errors.Is(err, bitcoind.ErrBlockNotFound) || errors.Is(err, bitcoind.ErrPruned) {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return blk, err
}
