package main

import (
	"context"
	"fmt"
	"io"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/bitcoind"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
)

// connectRunSource opens a JSON-RPC client to node and the block source
// cfindexd would detect for it (raw blocks over the node's P2P port when
// nodeP2P is set), which must fetch runs of blocks, as btcd's txindex mode
// does. closeAll releases both.
func connectRunSource(ctx context.Context, node *btcdtest.Node, nodeP2P bool) (client *bitcoind.Client, runs bitcoind.RunBlockSource, closeAll func(), err error) {
	client, err = bitcoind.NewClient(bitcoind.Config{Host: node.RPCHost(), User: node.User(), Password: node.Password()}, zerolog.Nop())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("node client: %w", err)
	}
	var opts bitcoind.SourceOptions
	if nodeP2P {
		opts = bitcoind.SourceOptions{NodeP2P: node.P2PAddr(), P2PNet: node.Params().Net}
	}
	source, err := bitcoind.DetectSource(ctx, client, zerolog.Nop(), opts)
	if err != nil {
		client.Close()
		return nil, nil, nil, fmt.Errorf("prevout source: %w", err)
	}
	closeAll = func() {
		if closer, ok := source.(io.Closer); ok {
			closer.Close()
		}
		client.Close()
	}
	runs, ok := source.(bitcoind.RunBlockSource)
	if !ok {
		closeAll()
		return nil, nil, nil, fmt.Errorf("prevout source %s does not fetch runs of blocks", source.Mode())
	}
	return client, runs, closeAll, nil
}
