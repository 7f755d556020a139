package chains

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/btcdtest/mainnetchain"
)

// Chain kinds (-chain).
const (
	Mainnet = "mainnet" // mainnetchain.Generate, cached
	Rich    = "rich"    // btcdtest.BuildTxRichChain, built every run
)

// Info describes the chain a benchmark runs on.
type Info struct {
	// Kind is Mainnet or Rich.
	Kind string `json:"kind"`
	// Height and Tip are btcd's best block once the chain is built.
	Height uint32 `json:"height"`
	Tip    string `json:"tip"`
	// RichBlocks is how many of the blocks carry transactions.
	RichBlocks int `json:"rich_blocks"`
	// BuildTime is how long building the chain took: mining it (rich), or
	// generating it when it was not cached and copying btcd's data
	// (mainnet).
	BuildTime time.Duration `json:"build_ns"`
	// Mainnet describes a mainnet-shaped chain: its shape, contents and
	// how long its generation took when it was made; CacheDir is where it
	// is cached, Cached whether this run found it there.
	Mainnet  *mainnetchain.Stats `json:"mainnet,omitempty"`
	CacheDir string              `json:"cache_dir,omitempty"`
	Cached   bool                `json:"cached,omitempty"`
	// blockFile is the chain's block file (corefiles.ReadChainFile), when
	// it has one: the blocks-dir source's files are written from it.
	blockFile string
}

// Build starts btcd on simnet (which, unlike btcd's regtest, keeps its
// chain across restarts) with --txindex in dataDir and mines richBlocks
// tx-rich blocks with the wallet of seed; extra are more btcd flags. The
// returned node is non-nil
// whenever it was started, also with an error; the caller stops it.
func Build(ctx context.Context, dataDir string, richBlocks int, seed int64, extra ...string) (*btcdtest.Node, Info, error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, Info{}, fmt.Errorf("btcd datadir: %w", err)
	}
	node, err := btcdtest.StartNode(btcdtest.Options{
		Net:        "simnet",
		DataDir:    dataDir,
		TxIndex:    true,
		WalletSeed: seed,
		Extra:      extra,
	})
	if err != nil {
		return nil, Info{}, fmt.Errorf("start btcd: %w", err)
	}
	start := time.Now()
	if err := btcdtest.BuildTxRichChain(ctx, node, node.Wallet(), richBlocks); err != nil {
		return node, Info{}, err
	}
	took := time.Since(start)
	tip, height, err := node.BestBlock(ctx)
	if err != nil {
		return node, Info{}, fmt.Errorf("btcd best block: %w", err)
	}
	return node, Info{Kind: Rich, Height: uint32(height), Tip: tip.String(), RichBlocks: richBlocks, BuildTime: took}, nil
}

// StartMainnet returns the cached mainnet-shaped chain of shape under
// cacheRoot (generating it first when it is missing), copies its btcd data
// into dataDir and starts btcd (simnet, --txindex) on it. The returned
// node is non-nil whenever it was started, also with an error; the caller
// stops it.
func StartMainnet(ctx context.Context, cacheRoot, dataDir string, shape mainnetchain.Shape, say func(string, ...any)) (*btcdtest.Node, Info, error) {
	start := time.Now()
	c, err := mainnetchain.LoadOrGenerate(ctx, cacheRoot, shape, say)
	if err != nil {
		return nil, Info{}, err
	}
	if c.Generated {
		say("generated in %s: %d transactions, %.1f MB of blocks", c.Stats.Took.Round(time.Second), c.Stats.Txs, float64(c.Stats.ChainBytes)/1e6)
	}
	say("copying btcd's data from %s", c.Dir)
	if err := c.CopyNodeData(dataDir); err != nil {
		return nil, Info{}, err
	}
	node, err := btcdtest.StartNode(c.Options(dataDir))
	if err != nil {
		return nil, Info{}, fmt.Errorf("start btcd: %w", err)
	}
	tip, height, err := node.BestBlock(ctx)
	if err != nil {
		return node, Info{}, fmt.Errorf("btcd best block: %w", err)
	}
	if tip.String() != c.Stats.Tip {
		return node, Info{}, fmt.Errorf("btcd on the copied chain is at %s, the cache says %s", tip, c.Stats.Tip)
	}
	stats := c.Stats
	return node, Info{
		Kind: Mainnet, Height: uint32(height), Tip: tip.String(), RichBlocks: shape.Blocks,
		BuildTime: time.Since(start), Mainnet: &stats, CacheDir: filepath.Clean(c.Dir), Cached: !c.Generated,
		blockFile: c.BlocksPath(),
	}, nil
}

// Hashes asks the node for the hash of every block up to height.
func Hashes(ctx context.Context, node *btcdtest.Node, height uint32) ([]chainhash.Hash, error) {
	hashes := make([]chainhash.Hash, height+1)
	for h := range hashes {
		var err error
		if hashes[h], err = node.BlockHash(ctx, int32(h)); err != nil {
			return nil, fmt.Errorf("block hash at %d: %w", h, err)
		}
	}
	return hashes, nil
}
