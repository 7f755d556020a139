package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
)

// chainInfo describes the chain a benchmark runs on.
type chainInfo struct {
	// Height and Tip are btcd's best block once the chain is built.
	Height uint32 `json:"height"`
	Tip    string `json:"tip"`
	// RichBlocks is how many of the blocks carry transactions.
	RichBlocks int `json:"rich_blocks"`
	// BuildTime is how long mining the chain took.
	BuildTime time.Duration `json:"build_ns"`
}

// buildChain starts btcd on simnet (which, unlike btcd's regtest, keeps its
// chain across restarts) with --txindex in dataDir and mines richBlocks
// tx-rich blocks with the wallet of seed; extra are more btcd flags. The
// returned node is non-nil
// whenever it was started, also with an error; the caller stops it.
func buildChain(ctx context.Context, dataDir string, richBlocks int, seed int64, extra ...string) (*btcdtest.Node, chainInfo, error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, chainInfo{}, fmt.Errorf("btcd datadir: %w", err)
	}
	node, err := btcdtest.StartNode(btcdtest.Options{
		Net:        "simnet",
		DataDir:    dataDir,
		TxIndex:    true,
		WalletSeed: seed,
		Extra:      extra,
	})
	if err != nil {
		return nil, chainInfo{}, fmt.Errorf("start btcd: %w", err)
	}
	start := time.Now()
	if err := btcdtest.BuildTxRichChain(ctx, node, node.Wallet(), richBlocks); err != nil {
		return node, chainInfo{}, err
	}
	took := time.Since(start)
	tip, height, err := node.BestBlock(ctx)
	if err != nil {
		return node, chainInfo{}, fmt.Errorf("btcd best block: %w", err)
	}
	return node, chainInfo{Height: uint32(height), Tip: tip.String(), RichBlocks: richBlocks, BuildTime: took}, nil
}
