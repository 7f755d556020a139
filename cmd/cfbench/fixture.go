package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/blockfiles"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/selfprofile"
	"github.com/cfindexd/cfindexd/gcs"
	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/indexer"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/corefiles"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/prevouts"
	"github.com/cfindexd/cfindexd/store"
)

// fixtureResult is the blocks-dir source on the recorded Bitcoin Core v31
// blocks directory (testdata/bitcoind-v31-blocksdir): Core's own blk, rev
// and xor files, read in place, with Core's filters as the oracle.
type fixtureResult struct {
	// Dir is the blocks directory read.
	Dir string `json:"dir"`
	// Blocks is the active chain indexed (genesis to the tip); Stale the
	// blocks off it that were read and filtered besides.
	Blocks int `json:"blocks"`
	Stale  int `json:"stale_blocks"`
	// Runs are the catch-ups, Wall their median.
	Runs []fixtureRun  `json:"runs"`
	Wall time.Duration `json:"wall_ns"`
	// Elements and BlockBytes total the active chain's filter elements
	// (before de-duplication) and serialized blocks.
	Elements   int64 `json:"elements"`
	BlockBytes int64 `json:"block_bytes"`
	// Verified: every run's store has Core's block hashes, filters and
	// filter headers, and every stale block's filter and filter header
	// built from the files equals Core's.
	Verified bool `json:"verified"`
}

// fixtureRun is one catch-up over the fixture.
type fixtureRun struct {
	// Wall is from the follower's start to the store at the tip; CPU this
	// process's CPU over it.
	Wall time.Duration `json:"wall_ns"`
	CPU  time.Duration `json:"cpu_ns"`
	// FromFiles and FromFallback count the blocks read from the files
	// and asked of the fallback source (there is none: no node).
	FromFiles    uint64 `json:"from_files"`
	FromFallback uint64 `json:"from_fallback"`
}

// fixtureNode is the node's part for the fixture, which has no node: the
// active chain's block hashes as Core reported them (chain.json). It
// answers what indexer.Node asks and getblockhash batches.
type fixtureNode struct {
	chain []*corefiles.FixtureBlock // by height
}

var errNoSuchBlock = errors.New("no such block in the fixture's active chain")

// GetBestBlockHash implements indexer.Node.
func (n fixtureNode) GetBestBlockHash(context.Context) (chainhash.Hash, error) {
	return n.chain[len(n.chain)-1].Hash, nil
}

// GetBlockHash implements indexer.Node.
func (n fixtureNode) GetBlockHash(_ context.Context, height int64) (chainhash.Hash, error) {
	if height < 0 || height >= int64(len(n.chain)) {
		return chainhash.Hash{}, fmt.Errorf("height %d: %w", height, errNoSuchBlock)
	}
	return n.chain[height].Hash, nil
}

// GetBlockHashes answers a getblockhash batch, as nodeclient.Client does.
func (n fixtureNode) GetBlockHashes(ctx context.Context, first, count uint32) ([]chainhash.Hash, error) {
	out := make([]chainhash.Hash, count)
	for i := range out {
		h, err := n.GetBlockHash(ctx, int64(first)+int64(i))
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

// GetBlockHeaderVerbose implements indexer.Node for the active chain.
func (n fixtureNode) GetBlockHeaderVerbose(_ context.Context, hash chainhash.Hash) (nodeclient.HeaderInfo, error) {
	for i, b := range n.chain {
		if b.Hash == hash {
			return nodeclient.HeaderInfo{Hash: hash, Height: uint32(i), PrevHash: b.Prev, Confirmations: int64(len(n.chain) - i)}, nil
		}
	}
	return nodeclient.HeaderInfo{}, fmt.Errorf("block %s: %w", hash, errNoSuchBlock)
}

// measureFixture indexes the recorded Core v31 blocks directory runs
// times in process (indexer.Follower wired as cmd/cfindexd wires it, the
// blocks-dir source without a fallback, the active chain's hashes from
// chain.json in place of the node's RPC), each into a fresh store under
// work, and checks every store and every stale block against Core's
// filters.
func measureFixture(ctx context.Context, work string, runs, workers, batchBlocks int) (*fixtureResult, error) {
	fx, err := corefiles.LoadFixtureDir(corefiles.FixtureDir())
	if err != nil {
		return nil, fmt.Errorf("the recorded Core v31 blocks directory (run cfbench from the cfindexd module, or -fixture=false): %w", err)
	}
	active := fx.ActiveChain()
	oracle := make([]btcdtest.FilterRecord, len(active))
	for i, b := range active {
		oracle[i] = btcdtest.FilterRecord{Hash: b.Hash, Filter: b.Filter, FilterHeader: b.FilterHeader}
	}
	res := &fixtureResult{Dir: fx.BlocksDir, Blocks: len(active)}
	for i := range runs {
		path := filepath.Join(work, fmt.Sprintf("fixture-%d.db", i))
		r, counts, err := fixtureCatchUp(ctx, fx, fixtureNode{chain: active}, path, workers, batchBlocks, oracle)
		os.Remove(path)
		if err != nil {
			return nil, fmt.Errorf("fixture run %d: %w", i+1, err)
		}
		res.Runs = append(res.Runs, r)
		res.Elements, res.BlockBytes = counts.elements.Load(), counts.bytes.Load()
	}
	res.Wall = medianOf(res.Runs, func(r fixtureRun) time.Duration { return r.Wall })
	if res.Stale, err = checkStaleBlocks(ctx, fx); err != nil {
		return nil, err
	}
	res.Verified = true
	return res, nil
}

// fixtureCatchUp runs one catch-up over the fixture into a new store at
// path and compares the store with Core's filters.
func fixtureCatchUp(ctx context.Context, fx *corefiles.Fixture, node fixtureNode, path string, workers, batchBlocks int, oracle []btcdtest.FilterRecord) (fixtureRun, *sourceCounts, error) {
	genesis := *fx.Params.GenesisHash
	st, err := store.Open(path, genesis, store.Options{Timeout: time.Second})
	if err != nil {
		return fixtureRun{}, nil, fmt.Errorf("open store: %w", err)
	}
	defer st.Close()
	dir, err := blockfiles.Open(fx.BlocksDir, fx.Params.Net, zerolog.Nop())
	if err != nil {
		return fixtureRun{}, nil, err
	}
	src := prevouts.NewBlocksDirSource(dir, nil, zerolog.Nop())
	defer src.Close()
	counted := countSource(src)
	follower := indexer.NewFollower(indexer.Config{Genesis: genesis, Workers: workers, BatchBlocks: batchBlocks},
		node, counted, st, nil, nil, zerolog.Nop())

	cpu0, start := selfprofile.SelfCPU(), time.Now()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	var runErr error
	go func() {
		runErr = follower.Run(runCtx)
		close(done)
	}()
	waitErr := waitStoreTip(ctx, st, uint32(fx.TipHeight), done)
	r := fixtureRun{Wall: time.Since(start), CPU: selfprofile.SelfCPU() - cpu0}
	stop()
	<-done
	if runErr != nil {
		return r, nil, fmt.Errorf("follower: %w", runErr)
	}
	if waitErr != nil {
		return r, nil, waitErr
	}
	r.FromFiles, r.FromFallback = src.BlockCounts()
	if r.FromFallback != 0 || r.FromFiles < uint64(len(oracle)) {
		return r, nil, fmt.Errorf("%d blocks read from the files, %d from no fallback, for %d blocks", r.FromFiles, r.FromFallback, len(oracle))
	}
	if err := btcdtest.CompareRecords(st, oracle); err != nil {
		return r, nil, fmt.Errorf("store differs from Core's filters: %w", err)
	}
	return r, counted.counts(), nil
}

// checkStaleBlocks reads every block of the fixture that is off the active
// chain from the files, builds its filter and filter header (on its
// parent's, Core's) and compares both with Core's. It returns how many
// it checked.
func checkStaleBlocks(ctx context.Context, fx *corefiles.Fixture) (int, error) {
	dir, err := blockfiles.Open(fx.BlocksDir, fx.Params.Net, zerolog.Nop())
	if err != nil {
		return 0, err
	}
	src := prevouts.NewBlocksDirSource(dir, nil, zerolog.Nop())
	defer src.Close()
	n := 0
	var b gcs.BasicBuilder
	for _, fb := range fx.Blocks {
		if fb.Active {
			continue
		}
		got, err := src.FetchBlocks(ctx, []chainhash.Hash{fb.Hash}, nil)
		if err != nil {
			return n, fmt.Errorf("stale block %s: %w", fb.Hash, err)
		}
		b.Reset()
		gcs.AddBasicScripts(&b, got[0].OutputScripts, got[0].PrevScripts)
		filter := b.AppendFilter(nil, fb.Hash)
		parent, ok := fx.Block(fb.Prev)
		if !ok {
			return n, fmt.Errorf("stale block %s: parent %s not in the fixture", fb.Hash, fb.Prev)
		}
		if !bytes.Equal(filter, fb.Filter) {
			return n, fmt.Errorf("stale block %s (height %d): filter differs from Core's", fb.Hash, fb.Height)
		}
		if h := headers.FilterHeader(filter, parent.FilterHeader); h != fb.FilterHeader {
			return n, fmt.Errorf("stale block %s (height %d): filter header %s, Core's %s", fb.Hash, fb.Height, h, fb.FilterHeader)
		}
		n++
	}
	if n == 0 {
		return 0, errors.New("the fixture has no stale block to check")
	}
	return n, nil
}
