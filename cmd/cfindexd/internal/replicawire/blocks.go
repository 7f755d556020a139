package replicawire

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/nodep2p"
	"github.com/cfindexd/cfindexd/p2p"
)

// primaryBlockConns is how many P2P connections a replica keeps to its
// primary for its light clients' block requests (beside the follower's).
const primaryBlockConns = 2

// PrimaryBlocks serves a replica's light clients the blocks they ask for
// (getdata) from its primary cfindexd, which has them from its node: a
// replica has no node of its own. Each block is checked against the hash
// asked for and its merkle root before a client gets it.
type PrimaryBlocks struct {
	pool *nodep2p.Pool
}

var _ p2p.BlockFetcher = (*PrimaryBlocks)(nil)

// Blocks returns the replica's block source for its P2P server: its
// primary over BIP-324 v2 (v1 with a primary whose v2transport is off);
// nil with no primary (the replica then answers every block notfound).
// Close it when the servers have stopped.
func (r *Replica) Blocks() *PrimaryBlocks {
	if r.k.Primary == "" {
		return nil
	}
	pool := nodep2p.NewPool(r.k.Primary, r.nw.Params.Net, primaryBlockConns,
		r.log.With().Str("component", "replica blocks").Logger())
	pool.Transport = p2pclient.TransportAuto
	pool.Fallback = "answering light clients' block requests notfound"
	return &PrimaryBlocks{pool: pool}
}

// FetchBlock implements p2p.BlockFetcher: a block the primary does not
// have is p2p.ErrNotFound.
func (b *PrimaryBlocks) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, error) {
	got, err := b.pool.Fetch(ctx, []chainhash.Hash{hash}, 0)
	if errors.Is(err, nodep2p.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", p2p.ErrNotFound, err)
	}
	if err != nil {
		return nil, fmt.Errorf("block %s from the primary: %w", hash, err)
	}
	var blk wire.MsgBlock
	if err := blk.Deserialize(bytes.NewReader(got[0].Raw)); err != nil {
		return nil, fmt.Errorf("block %s from the primary: %w", hash, err)
	}
	return &blk, nil
}

// RelayTransaction implements the daemon's peer node: a replica relays
// no transactions (relaytx needs a node).
func (b *PrimaryBlocks) RelayTransaction(context.Context, []byte) (chainhash.Hash, error) {
	return chainhash.Hash{}, errNoRelay
}

// errNoRelay is RelayTransaction's error.
var errNoRelay = errors.New("a read replica relays no transactions")

// Close closes the connections to the primary.
func (b *PrimaryBlocks) Close() error { return b.pool.Close() }
