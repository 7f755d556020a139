package nodep2p

import (
	"context"

	"github.com/btcsuite/btcd/wire/v2"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
)

// CheckNodeP2P connects to addr as the txindex source would (dial, version
// handshake, then a request for the block identify names, block 1 of the
// RPC node's chain) and disconnects. It returns nil when addr is the P2P
// port of that node (or of a node on the same chain), an error wrapping
// ErrNotTheNode when addr answers as
// something else — a node on another network (named), a node on the same
// network but another chain, or no Bitcoin node at all — and another error
// when addr cannot be reached. Every step has a short timeout, so a wrong
// address fails within seconds.
func CheckNodeP2P(ctx context.Context, addr string, btcnet wire.BitcoinNet, identify IdentifyBlock) error {
	conn, err := dialP2P(ctx, addr, btcnet, p2pclient.TransportV1, identify)
	if err != nil {
		return err
	}
	conn.close()
	return nil
}
