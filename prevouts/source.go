package prevouts

import (
	"context"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/blockfiles"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/nodep2p"
)

// BlockSource fetches a block together with the scripts of the outputs its
// inputs spend.
type BlockSource interface {
	// FetchBlock returns the block and prevScripts: the spent output
	// script of each non-coinbase input, in block order (transaction
	// order, then input order), as gcs.AddBasicElements expects.
	FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, [][]byte, error)
	// Mode names the method: ModeREST, ModeGetBlock3 or ModeTxIndex.
	Mode() string
}

// RunBlockSource is a BlockSource that can fetch a run of blocks with fewer
// round trips than one FetchBlock each. The txindex mode implements it:
// one getdata (or getblock batch) for the run, one getrawtransaction batch
// for the prevouts of the whole run that no earlier block supplied.
type RunBlockSource interface {
	BlockSource
	// FetchBlocks returns the blocks with the given hashes, in order,
	// read in place (FetchedBlock). The hashes are usually consecutive
	// blocks of one chain. Several runs may be fetched at once; turn,
	// from a RunOrder shared by them (nil for none), orders how their
	// transactions become known, so that outputs created by an earlier
	// run are resolved without asking the node. FetchBlocks ends turn
	// before it returns the last block of the run. It may return only the
	// first blocks of the run (at least one) when the whole run would hold
	// more memory than it allows itself (blocks much larger than the run
	// was sized for): the turn is then still held, and the caller fetches
	// the rest with further calls passing the same turn (or ends it with
	// Done if it gives up).
	FetchBlocks(ctx context.Context, hashes []chainhash.Hash, turn *RunTurn) ([]FetchedBlock, error)
}

// PrevoutCounter is a BlockSource that counts where the spent scripts it
// resolved came from. The txindex mode implements it: its script cache,
// or the node (getrawtransaction).
type PrevoutCounter interface {
	PrevoutCounts() (fromCache, fromNode uint64)
}

// FetchedBlock is one block of a RunBlockSource run: what a basic filter
// and the store need, without a decoded wire.MsgBlock.
type FetchedBlock struct {
	// Header is the block's header; Hash its hash, checked to be the one
	// asked for, and the transactions checked against its merkle root.
	Header wire.BlockHeader
	Hash   chainhash.Hash
	// OutputScripts holds every output script of the block in block
	// order, empty and OP_RETURN ones included.
	OutputScripts [][]byte
	// PrevScripts is as FetchBlock's second result: the spent output
	// script of each non-coinbase input, in block order.
	PrevScripts [][]byte
	// Raw is the serialized block, which the scripts point into.
	Raw []byte
}

// Prevout source modes, fastest first.
const (
	ModeREST      = "rest-spenttxouts" // /rest/block + /rest/spenttxouts (Core >= 30, -rest=1)
	ModeGetBlock3 = "getblock-verbosity3"
	ModeTxIndex   = "txindex-getrawtransaction" // raw block + batched getrawtransaction (btcd, or Core with -txindex)
)

// Minimum Bitcoin Core versions for the modes.
const (
	minCoreSpentTxOuts = 300000 // /rest/spenttxouts added in v30.0
	minCoreVerbosity3  = 230000 // getblock verbosity 3 added in v23.0
)

// SourceOptions tunes DetectSource. The zero value is usable.
type SourceOptions struct {
	// ScriptCacheBytes bounds the txindex mode's cache of output scripts;
	// zero means DefaultScriptCacheBytes, negative disables the cache
	// (outputs created earlier in the same run are still resolved
	// without asking the node).
	ScriptCacheBytes int
	// BatchSize is the number of getrawtransaction calls per JSON-RPC
	// batch in txindex mode; zero means DefaultBatchSize.
	BatchSize int
	// NodeP2P is host:port of the node's P2P listener; when set, the
	// txindex mode fetches raw blocks over P2P (one getdata per run)
	// instead of getblock, falling back to getblock for any run that
	// fails. Empty means JSON-RPC only. Other modes ignore it.
	NodeP2P string
	// NodeP2PGuessed says NodeP2P was derived (the RPC host on the
	// chain's default port) rather than configured: when it cannot be
	// dialled, that is logged at info level, not as a warning.
	NodeP2PGuessed bool
	// P2PNet is the network magic for NodeP2P (chaincfg Params.Net).
	P2PNet wire.BitcoinNet
	// P2PConns bounds the P2P connections; zero means DefaultP2PConns.
	P2PConns int
	// Force skips detection and uses this mode (one of the Mode*
	// constants) if non-empty.
	Force string

	// BlocksDir is Bitcoin Core's blocks directory (the one holding
	// blk00000.dat) for ModeBlocksDir; empty means not used. Detection
	// picks it for Bitcoin Core when it is readable and holds the node's
	// chain. BlocksDirNet is the network magic of its records.
	BlocksDir    string
	BlocksDirNet wire.BitcoinNet
	// RPCThreads is the node's -rpcthreads, which sizes the getblock-3
	// mode's parallel requests (one fewer in flight); zero means Core's
	// default for the node's version (DefaultRPCThreads).
	RPCThreads int
}

// DefaultBatchSize is the number of getrawtransaction calls per batch.
const DefaultBatchSize = 250

// DetectSource asks the node what it is and picks the fastest way to get
// prevout scripts: REST spenttxouts (Core >= 30 with -rest=1), getblock
// verbosity 3 (Core >= 23), or raw blocks plus batched getrawtransaction
// (btcd with --txindex, or older Core with -txindex=1). It logs the choice
// once. A node offering none of them, or not the one SourceOptions.Force
// names, yields an error wrapping ErrNoPrevoutSource that says which
// option to turn on.
func DetectSource(ctx context.Context, c *nodeclient.Client, log zerolog.Logger, opts ...SourceOptions) (BlockSource, error) {
	var o SourceOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	// The blocks directory is checked first, forced or not: forced, a
	// directory that is not the node's stops cfindexd at start.
	if o.Force == ModeBlocksDir || (o.Force == "" && o.BlocksDir != "") {
		src, err := detectBlocksDir(ctx, c, log, o, o.Force == ModeBlocksDir)
		if src != nil || err != nil {
			return src, err
		}
	}
	info, err := c.GetNodeInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("detect node: %w", err)
	}
	logger := log.With().Str("node", info.Kind.String()).Str("subversion", info.Subversion).Logger()
	if o.Force != "" {
		if err := checkForced(ctx, c, info, o.Force); err != nil {
			return nil, err
		}
		if o.Force == ModeGetBlock3 && o.RPCThreads == 0 {
			o.RPCThreads = DefaultRPCThreads(info.Version)
		}
		src, err := newSource(c, o.Force, o)
		if err == nil {
			logger.Info().Str("mode", src.Mode()).Msg("prevout source forced by configuration; the node serves it")
		}
		return src, err
	}

	if info.Kind == nodeclient.NodeCore && info.Version >= minCoreSpentTxOuts {
		ok, err := probeREST(ctx, c)
		if err != nil {
			return nil, err
		}
		if ok {
			logger.Info().Str("mode", ModeREST).Str("rest", c.RESTURL()).Msg("prevout source: REST block + spenttxouts")
			return newSource(c, ModeREST, o)
		}
		logger.Warn().Str("mode", ModeGetBlock3).Msg(restOffHint)
	}
	if info.Kind == nodeclient.NodeCore && info.Version >= minCoreVerbosity3 {
		if o.RPCThreads == 0 {
			o.RPCThreads = DefaultRPCThreads(info.Version)
		}
		logger.Info().Str("mode", ModeGetBlock3).Int("parallel_requests", max(1, o.RPCThreads-1)).
			Msg("prevout source: getblock verbosity 3")
		return newSource(c, ModeGetBlock3, o)
	}
	ok, err := c.HasTxIndex(ctx, info)
	if err != nil {
		return nil, fmt.Errorf("detect txindex: %w", err)
	}
	if ok {
		logger.Info().Str("mode", ModeTxIndex).Msg("prevout source: raw blocks + batched getrawtransaction (txindex)")
		return newSource(c, ModeTxIndex, o)
	}
	switch info.Kind {
	case nodeclient.NodeBtcd:
		return nil, fmt.Errorf("%w: btcd has no spent-output RPC; restart btcd with --txindex", nodeclient.ErrNoPrevoutSource)
	case nodeclient.NodeCore:
		return nil, fmt.Errorf("%w: Bitcoin Core %s has no getblock verbosity 3 (needs >= 23.0) and no transaction index; upgrade Bitcoin Core (>= 30 with -rest=1 is fastest) or restart it with -txindex=1", nodeclient.ErrNoPrevoutSource, info.Subversion)
	}
	return nil, fmt.Errorf("%w: unknown node %q without a transaction index; use Bitcoin Core >= 23 (or >= 30 with -rest=1), or enable -txindex", nodeclient.ErrNoPrevoutSource, info.Subversion)
}

// restOffHint is logged when a Bitcoin Core that could serve REST
// spenttxouts has its REST interface off. The ratio it quotes is a
// measurement on one machine (docs/performance.md), not a promise.
const restOffHint = "REST interface is off, so prevouts come from getblock verbosity 3, which is many times slower than REST (docs/performance.md); start bitcoind with -rest=1 for the fastest prevout source"

// checkForced checks that the node serves the mode the configuration
// forces, as detection would, so that a source the node cannot serve stops
// cfindexd at start with the option to turn on instead of failing at the
// first block.
func checkForced(ctx context.Context, c *nodeclient.Client, info nodeclient.NodeInfo, mode string) error {
	switch mode {
	case ModeREST:
		if info.Kind == nodeclient.NodeBtcd {
			return fmt.Errorf("%w: prevoutsource = rest, but btcd has no REST interface; use prevoutsource = txindex with btcd --txindex", nodeclient.ErrNoPrevoutSource)
		}
		ok, err := probeREST(ctx, c)
		if err != nil {
			return fmt.Errorf("prevoutsource = rest: %w", err)
		}
		if !ok {
			return fmt.Errorf("%w: prevoutsource = rest, but %s does not serve /rest/spenttxouts at %s: start Bitcoin Core (>= 30) with -rest=1 (or set resturl to where it serves REST)", nodeclient.ErrNoPrevoutSource, info.Subversion, c.RESTURL())
		}
	case ModeGetBlock3:
		if info.Kind != nodeclient.NodeCore || info.Version < minCoreVerbosity3 {
			return fmt.Errorf("%w: prevoutsource = getblock needs Bitcoin Core >= 23 (getblock verbosity 3), but the node is %s %s", nodeclient.ErrNoPrevoutSource, info.Kind, info.Subversion)
		}
	case ModeTxIndex:
		ok, err := c.HasTxIndex(ctx, info)
		if err != nil {
			return fmt.Errorf("prevoutsource = txindex: detect txindex: %w", err)
		}
		if !ok {
			return fmt.Errorf("%w: prevoutsource = txindex, but the node has no transaction index: restart it with -txindex=1 (btcd: --txindex)", nodeclient.ErrNoPrevoutSource)
		}
	default:
		return fmt.Errorf("unknown prevout source mode %q (want %s, %s, %s or %s)", mode, ModeREST, ModeGetBlock3, ModeTxIndex, ModeBlocksDir)
	}
	return nil
}

func newSource(c *nodeclient.Client, mode string, o SourceOptions) (BlockSource, error) {
	switch mode {
	case ModeREST:
		return &restSource{c: c}, nil
	case ModeGetBlock3:
		return newVerboseSource(c, o.RPCThreads), nil
	case ModeTxIndex:
		size := o.ScriptCacheBytes
		if size == 0 {
			size = DefaultScriptCacheBytes
		}
		batch := o.BatchSize
		if batch <= 0 {
			batch = DefaultBatchSize
		}
		src := &txIndexSource{c: c, log: c.Logger(), batch: batch, runCap: runCapBytes}
		if size > 0 {
			src.cache = newScriptCache(size)
		}
		if o.NodeP2P != "" {
			src.p2p = nodep2p.NewPool(o.NodeP2P, o.P2PNet, o.P2PConns, c.Logger())
			src.p2p.Guessed = o.NodeP2PGuessed
			src.p2p.Identify = c.IdentifyingBlock
		}
		return src, nil
	case ModeBlocksDir:
		dir, err := blockfiles.Open(o.BlocksDir, o.BlocksDirNet, c.Logger())
		if err != nil {
			return nil, err
		}
		return NewBlocksDirSource(dir, nil, c.Logger()), nil
	}
	return nil, fmt.Errorf("unknown prevout source mode %q (want %s, %s, %s or %s)", mode, ModeREST, ModeGetBlock3, ModeTxIndex, ModeBlocksDir)
}

// NewSource returns the BlockSource for mode without asking the node.
func NewSource(c *nodeclient.Client, mode string, opts SourceOptions) (BlockSource, error) {
	return newSource(c, mode, opts)
}

// probeREST reports whether /rest/spenttxouts answers for the tip.
func probeREST(ctx context.Context, c *nodeclient.Client) (bool, error) {
	tip, err := c.GetBestBlockHash(ctx)
	if err != nil {
		return false, err
	}
	_, err = c.RESTGet(ctx, "/rest/spenttxouts/"+tip.String()+".bin")
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, nodeclient.ErrRESTUnavailable), errors.Is(err, nodeclient.ErrPruned), errors.Is(err, nodeclient.ErrBlockNotFound):
		return false, nil
	case errors.Is(err, nodeclient.ErrUnreachable) && c.RESTURLConfigured():
		log := c.Logger()
		log.Warn().Err(err).Str("rest", c.RESTURL()).Msg("REST URL unreachable; not using REST")
		return false, nil
	}
	return false, err
}
