package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/prevouts"
)

// syncEnv is what a source needs to reach the chain: the node serving it
// and, for the blocks-dir source, the Core-format blocks directory written
// from the chain (empty when no selected source reads it).
type syncEnv struct {
	Node      *btcdtest.Node
	BlocksDir string
}

// syncSource is one way cfindexd gets blocks and the scripts they spend,
// measured by `cfbench sync` on the same chain. Adding a source (say the
// blocks-dir source, reading Core-format files written from the chain's
// block file) is one more entry in syncSources: its daemon flags and how
// to open it in process.
type syncSource struct {
	// Name is the -sources value and the report's key; Title describes it.
	Name, Title string
	// DaemonFlags are the cfindexd flags that select the source.
	DaemonFlags func(env syncEnv) []string
	// Open connects to the node and returns the source cfindexd would
	// use with those flags, for the profiled in-process run and the node
	// floor. closeAll releases both.
	Open func(ctx context.Context, env syncEnv) (client *nodeclient.Client, source prevouts.BlockSource, closeAll func(), err error)
	// ReadsBlocksDir: the source reads syncEnv.BlocksDir, which the run
	// writes from the chain before measuring.
	ReadsBlocksDir bool
}

// syncSources lists every source, in report order.
func syncSources() []syncSource {
	return []syncSource{
		{
			Name:  "txindex-p2p",
			Title: "txindex, raw blocks over btcd's P2P port",
			DaemonFlags: func(env syncEnv) []string {
				return []string{"--prevoutsource=txindex", "--nodep2p=" + env.Node.P2PAddr()}
			},
			Open: func(ctx context.Context, env syncEnv) (*nodeclient.Client, prevouts.BlockSource, func(), error) {
				return openNodeSource(ctx, env.Node, prevouts.SourceOptions{
					Force: prevouts.ModeTxIndex, NodeP2P: env.Node.P2PAddr(), P2PNet: env.Node.Params().Net,
				})
			},
		},
		{
			Name:  "txindex-rpc",
			Title: "txindex, everything over JSON-RPC",
			DaemonFlags: func(syncEnv) []string {
				// An explicit empty nodep2p: "auto" would look for a node
				// on the chain's default port, which on a shared machine
				// may be someone else's.
				return []string{"--prevoutsource=txindex", "--nodep2p="}
			},
			Open: func(ctx context.Context, env syncEnv) (*nodeclient.Client, prevouts.BlockSource, func(), error) {
				return openNodeSource(ctx, env.Node, prevouts.SourceOptions{Force: prevouts.ModeTxIndex})
			},
		},
		{
			Name:  "blocksdir",
			Title: "blocks dir: Core-format blk/rev files, block hashes from btcd",
			DaemonFlags: func(env syncEnv) []string {
				// JSON-RPC only for what the files cannot answer (the
				// fallback, txindex here; never used on a complete
				// directory): no "auto" P2P discovery.
				return []string{"--prevoutsource=blocksdir", "--blocksdir=" + env.BlocksDir, "--nodep2p="}
			},
			Open: func(ctx context.Context, env syncEnv) (*nodeclient.Client, prevouts.BlockSource, func(), error) {
				return openNodeSource(ctx, env.Node, prevouts.SourceOptions{
					Force: prevouts.ModeBlocksDir, BlocksDir: env.BlocksDir, BlocksDirNet: env.Node.Params().Net,
				})
			},
			ReadsBlocksDir: true,
		},
	}
}

// sourceNames lists the names of syncSources.
func sourceNames() []string {
	var names []string
	for _, s := range syncSources() {
		names = append(names, s.Name)
	}
	return names
}

// pickSources resolves a comma-separated -sources value, in the order
// given, without repeats.
func pickSources(list string) ([]syncSource, error) {
	all := syncSources()
	var out []syncSource
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(all, func(s syncSource) bool { return s.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("%w: -sources: unknown source %q (have %s)", errUsage, name, strings.Join(sourceNames(), ", "))
		}
		if slices.ContainsFunc(out, func(s syncSource) bool { return s.Name == name }) {
			return nil, fmt.Errorf("%w: -sources: %q twice", errUsage, name)
		}
		out = append(out, all[i])
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: -sources is empty", errUsage)
	}
	return out, nil
}

// openNodeSource opens a JSON-RPC client to node and the prevout source of
// opts. closeAll releases both.
func openNodeSource(ctx context.Context, node *btcdtest.Node, opts prevouts.SourceOptions) (*nodeclient.Client, prevouts.BlockSource, func(), error) {
	client, err := nodeclient.NewClient(nodeclient.Config{Host: node.RPCHost(), User: node.User(), Password: node.Password()}, zerolog.Nop())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("node client: %w", err)
	}
	source, err := prevouts.DetectSource(ctx, client, zerolog.Nop(), opts)
	if err != nil {
		client.Close()
		return nil, nil, nil, fmt.Errorf("prevout source: %w", err)
	}
	closeAll := func() {
		if closer, ok := source.(io.Closer); ok {
			closer.Close()
		}
		client.Close()
	}
	return client, source, closeAll, nil
}
