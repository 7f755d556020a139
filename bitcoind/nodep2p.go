package bitcoind

import (
	"context"
	"errors"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// codeOutOfRange is RPC_INVALID_PARAMETER, which getblockhash answers for a
// height above the tip ("Block height out of range").
const codeOutOfRange = -8

// identifyingBlock is the identifyBlock of the node behind c: its block 1,
// the first block that tells one chain of a network from another; ok is
// false while the chain is only its genesis block.
func (c *Client) identifyingBlock(ctx context.Context) (chainhash.Hash, bool, error) {
	hash, err := c.GetBlockHash(ctx, 1)
	var rpcErr *RPCError
	if errors.As(err, &rpcErr) && rpcErr.Code == codeOutOfRange {
		return chainhash.Hash{}, false, nil
	}
	if err != nil {
		return chainhash.Hash{}, false, err
	}
	return hash, true, nil
}

// CheckNodeP2P connects to addr as the txindex source would (dial, version
// handshake, then a request for block 1 of c's chain) and disconnects. It
// returns nil when addr is the P2P port of c's node (or of a node on the
// same chain), an error wrapping ErrP2PNotTheNode when addr answers as
// something else — a node on another network (named), a node on the same
// network but another chain, or no Bitcoin node at all — and another error
// when addr cannot be reached. Every step has a short timeout, so a wrong
// address fails within seconds.
func CheckNodeP2P(ctx context.Context, c *Client, addr string, btcnet wire.BitcoinNet) error {
	conn, err := dialP2P(ctx, addr, btcnet, c.identifyingBlock)
	if err != nil {
		return err
	}
	conn.close()
	return nil
}
