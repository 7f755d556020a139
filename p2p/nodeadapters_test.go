package p2p

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/mempool"
	"github.com/cfindexd/cfindexd/nodeclient"
)

// The daemon's adapters (cmd/cfindexd/nodeblocks.go), for tests that run
// the server against a real node or mirror.

// nodeBlocks serves BlockFetcher and TxRelayer from a node client.
type nodeBlocks struct{ c *nodeclient.Client }

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
		return chainhash.Hash{}, err
	}
	return *h, nil
}

// mirrorMempool serves Mempool from a mirror.
type mirrorMempool struct{ *mempool.Mirror }

func (m mirrorMempool) Subscribe(buffer int) MempoolSubscription { return m.Mirror.Subscribe(buffer) }
