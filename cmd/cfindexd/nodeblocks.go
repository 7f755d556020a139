package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/mempool"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/p2p"
)

// Adapters from the node client and the mempool mirror to the interfaces
// the P2P server declares.

// nodeBlocks adapts a node client to p2p.BlockFetcher and p2p.TxRelayer.
// Give it a client of its own (nodeclient.Config.MaxConns small), not the
// indexer's: peers' requests then queue on that client's connections and
// never delay the indexer's calls.
type nodeBlocks struct{ c *nodeclient.Client }

var (
	_ p2p.BlockFetcher = nodeBlocks{}
	_ p2p.TxRelayer    = nodeBlocks{}
)

// FetchBlock implements p2p.BlockFetcher over the node's getblock. A block
// the node does not know or has pruned is p2p.ErrNotFound.
func (n nodeBlocks) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, error) {
	blk, err := n.c.GetRawBlock(ctx, hash)
	if errors.Is(err, nodeclient.ErrBlockNotFound) || errors.Is(err, nodeclient.ErrPruned) {
		return nil, fmt.Errorf("%w: %w", p2p.ErrNotFound, err)
	}
	return blk, err
}

// RelayTransaction implements p2p.TxRelayer over the node's
// sendrawtransaction, which gets the peer's bytes as they came.
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

// p2pMempool adapts the mempool mirror to p2p.Mempool.
type p2pMempool struct{ *mempool.Mirror }

var _ p2p.Mempool = p2pMempool{}

// Subscribe implements p2p.Mempool.
func (m p2pMempool) Subscribe(buffer int) p2p.MempoolSubscription {
	return m.Mirror.Subscribe(buffer)
}
