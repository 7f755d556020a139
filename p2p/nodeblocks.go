package p2p

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/cfindexd/cfindexd/nodeclient"
)

// nodeBlocks adapts the node's RPC client to BlockFetcher and TxRelayer.
type nodeBlocks struct{ c *nodeclient.Client }

var (
	_ BlockFetcher = nodeBlocks{}
	_ TxRelayer    = nodeBlocks{}
)

// NewNodeBlockFetcher returns a BlockFetcher over the node's getblock. A
// block the node does not know or has pruned is ErrNotFound. Give it a
// client of its own (nodeclient.Config.MaxConns small), not the indexer's:
// peers' requests then queue on that client's connections and never delay
// the indexer's calls.
func NewNodeBlockFetcher(c *nodeclient.Client) BlockFetcher { return nodeBlocks{c} }

// NewNodeTxRelayer returns a TxRelayer over the node's sendrawtransaction,
// which gets the peer's bytes as they came, hex-encoded. Like the block
// fetcher, it should have a client of its own.
func NewNodeTxRelayer(c *nodeclient.Client) TxRelayer { return nodeBlocks{c} }

func (n nodeBlocks) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, error) {
	blk, err := n.c.GetRawBlock(ctx, hash)
	if errors.Is(err, nodeclient.ErrBlockNotFound) || errors.Is(err, nodeclient.ErrPruned) {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return blk, err
}

func (n nodeBlocks) RelayTransaction(ctx context.Context, raw []byte) (chainhash.Hash, error) {
	var txid string
	if err := n.c.Call(ctx, "sendrawtransaction", []any{hex.EncodeToString(raw)}, &txid); err != nil {
		return chainhash.Hash{}, err
	}
	h, err := chainhash.NewHashFromStr(txid)
	if err != nil {
		return chainhash.Hash{}, fmt.Errorf("sendrawtransaction: bad txid %q: %w", txid, err)
	}
	return *h, nil
}
