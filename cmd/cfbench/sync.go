package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/chains"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/daemon"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/procstat"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/spbench"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/btcdtest/mainnetchain"
	"github.com/cfindexd/cfindexd/prevouts"
	"github.com/cfindexd/cfindexd/store"
)

// syncConfig holds the flags of the sync subcommand.
type syncConfig struct {
	commonFlags
	// Chain is chains.Mainnet or chains.Rich; TxsPerBlock sizes the
	// mainnet-shaped chain's blocks; CacheRoot is where it is cached.
	Chain       string
	TxsPerBlock int
	OldCoins    int
	CacheRoot   string
	// Sources are the -sources, resolved.
	Sources    []syncSource
	sourceList string
	// Runs repeats each measurement; the report shows the median.
	Runs int
	// Workers and BatchBlocks are passed to cfindexd (--workers,
	// --batchblocks) and to the in-process follower.
	Workers     int
	BatchBlocks int
	// Verify compares every store (each daemon run's, the in-process
	// run's) with btcd's own filters and filter headers.
	Verify bool
	// Profile runs one source (ProfileSource, the first of Sources when
	// not given) once more in process under the CPU profiler; TopN is how
	// many lines of its top the table shows. Trace also records a runtime
	// execution trace of that run (trace.out: where goroutines wait).
	Profile       bool
	ProfileSource syncSource
	profileName   string
	TopN          int
	Trace         bool
	// Floor and Rebuild measure the node floor and btcd's own rebuild;
	// turning them off shortens a run that studies cfindexd alone.
	Floor, Rebuild bool
	// Fixture runs the blocks-dir source on the recorded Core v31 blocks
	// directory (in process: it has no node).
	Fixture bool
	// Extra are more cfindexd flags for every daemon run.
	Extra string
	// SPCompare follows every catch-up with one with the silent-payment
	// index on, checks the index, and times its background build.
	SPCompare bool
}

// parseSyncFlags parses and validates the sync subcommand's flags.
func parseSyncFlags(args []string, stderr io.Writer) (syncConfig, error) {
	var c syncConfig
	fs := flag.NewFlagSet("cfbench sync", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs, 500, 90*time.Minute)
	fs.StringVar(&c.Chain, "chain", chains.Mainnet, "chain to measure on: mainnet (mainnet-shaped, generated once and cached) or rich (the small tx-rich chain, built every run)")
	fs.IntVar(&c.TxsPerBlock, "txs", 2000, "transactions per block of the mainnet-shaped chain")
	fs.IntVar(&c.OldCoins, "oldcoins", 0, "unspent outputs of the mainnet-shaped chain's pre-history, for old spends (0: 300 per transaction of a block)")
	fs.StringVar(&c.CacheRoot, "cache", "", "where mainnet-shaped chains are cached (default: the user cache directory's cfindexd-bench)")
	fs.StringVar(&c.sourceList, "sources", strings.Join(sourceNames(), ","), "comma-separated prevout sources to measure: "+strings.Join(sourceNames(), ", "))
	fs.IntVar(&c.Runs, "runs", 2, "times to repeat each catch-up measurement on the same chain; the report shows the median")
	fs.IntVar(&c.Workers, "workers", 8, "cfindexd --workers")
	fs.IntVar(&c.BatchBlocks, "batchblocks", 500, "cfindexd --batchblocks")
	fs.BoolVar(&c.Verify, "verify", true, "check every filter and filter header of every store against btcd's")
	fs.BoolVar(&c.Profile, "profile", true, "profile one source's catch-up in process")
	fs.StringVar(&c.profileName, "profilesource", "", "the source -profile runs, one of -sources (default: the first)")
	fs.BoolVar(&c.Trace, "trace", false, "also record an execution trace of the profiled run (trace.out in -out; go tool trace)")
	fs.IntVar(&c.TopN, "top", 20, "lines of the CPU profile's top to print")
	fs.BoolVar(&c.Floor, "floor", true, "measure the node floor of every source")
	fs.BoolVar(&c.Rebuild, "rebuild", true, "measure btcd rebuilding its own cfindex (the ratio's other side)")
	fs.BoolVar(&c.Fixture, "fixture", true, "also run the blocks-dir source on the recorded Core v31 blocks directory (testdata/bitcoind-v31-blocksdir)")
	fs.BoolVar(&c.SPCompare, "sp-compare", false, "also run every catch-up with --silentpayments (alternating), check the index against btcd's data, and time its background build on a store built without it")
	fs.StringVar(&c.Extra, "cfindexdflags", "", "more cfindexd flags for every run, space-separated (e.g. --scriptcache=32)")
	if err := parseFlagSet(fs, args); err != nil {
		return c, err
	}
	err := c.validate()
	return c, err
}

// validate checks the flags' ranges and resolves -sources.
func (c *syncConfig) validate() error {
	switch {
	case c.Chain != chains.Mainnet && c.Chain != chains.Rich:
		return fmt.Errorf("%w: -chain %q is neither %s nor %s", errUsage, c.Chain, chains.Mainnet, chains.Rich)
	case c.Runs < 1 || c.Runs > 20:
		return fmt.Errorf("%w: -runs %d is outside 1..20", errUsage, c.Runs)
	case c.Workers < 1 || c.Workers > 64:
		return fmt.Errorf("%w: -workers %d is outside 1..64 (cfindexd's range)", errUsage, c.Workers)
	case c.BatchBlocks < 1 || c.BatchBlocks > 10_000:
		return fmt.Errorf("%w: -batchblocks %d is outside 1..10000 (cfindexd's range)", errUsage, c.BatchBlocks)
	case c.TopN < 0:
		return fmt.Errorf("%w: -top %d is negative", errUsage, c.TopN)
	}
	if c.Chain == chains.Mainnet {
		if err := c.shape().Validate(); err != nil {
			return fmt.Errorf("%w: -blocks/-txs: %w", errUsage, err)
		}
	}
	var err error
	if c.Sources, err = pickSources(c.sourceList); err != nil {
		return err
	}
	c.ProfileSource = c.Sources[0]
	if c.profileName != "" {
		i := slices.IndexFunc(c.Sources, func(s syncSource) bool { return s.Name == c.profileName })
		if i < 0 {
			return fmt.Errorf("%w: -profilesource %q is not one of -sources", errUsage, c.profileName)
		}
		c.ProfileSource = c.Sources[i]
	}
	return c.commonFlags.validate()
}

// shape is the mainnet-shaped chain the flags ask for.
func (c *syncConfig) shape() mainnetchain.Shape {
	return mainnetchain.Shape{Blocks: c.Blocks, TxsPerBlock: c.TxsPerBlock, OldCoins: c.OldCoins, Seed: c.WalletSeed}
}

// runSync is the sync subcommand: build the chain, measure cfindexd's
// catch-up as a subprocess for every source, profile the first in
// process, measure the node floor of every source, then drop btcd's
// cfindex and time btcd rebuilding it, and report.
func runSync(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runSubcommand(ctx, args, stdout, stderr, parseSyncFlags, benchSync)
}

// benchSync runs the whole sync benchmark, logging progress to logw, and
// returns the report.
func benchSync(ctx context.Context, cfg syncConfig, logw io.Writer) (*syncReport, error) {
	say := func(format string, a ...any) { fmt.Fprintf(logw, "cfbench: "+format+"\n", a...) }
	ws, err := newWorkspace(ctx, "sync", cfg.Keep, cfg.Out, cfg.CFIndexd, say)
	if err != nil {
		return nil, err
	}
	defer ws.cleanup()
	work, out, bin := ws.work, ws.out, ws.binary

	node, chain, err := startSyncChain(ctx, cfg, filepath.Join(work, "btcd"), say)
	if node != nil {
		defer node.Stop()
	}
	if err != nil {
		return nil, err
	}
	env := syncEnv{Node: node}
	say("chain: %d blocks (tip %s)", chain.Height+1, chain.Tip)
	var blocksDir *chains.BlocksDirInfo
	if slices.ContainsFunc(cfg.Sources, func(s syncSource) bool { return s.ReadsBlocksDir }) {
		say("writing the chain as Bitcoin Core's blocks directory (blk/rev/xor)")
		info, err := chains.WriteBlocksDir(ctx, filepath.Join(work, "blocks"), chain, node)
		if err != nil {
			return nil, err
		}
		say("  %d blocks in %d blk/rev pairs (%.1f MB blk, %.1f MB rev) in %s", info.Blocks, info.Files, mb(info.BlkBytes), mb(info.RevBytes), dur(info.Took))
		env.BlocksDir, blocksDir = info.Dir, &info
		// The writer's UTXO set and blocks are garbage now: hand the
		// memory back before the measurements share the machine.
		debug.FreeOSMemory()
	}
	say("reading btcd's filters and filter headers (the oracle)")
	oracle, err := node.FilterChain(ctx)
	if err != nil {
		return nil, fmt.Errorf("btcd's filters: %w", err)
	}
	hashes := make([]chainhash.Hash, len(oracle))
	for i, r := range oracle {
		hashes[i] = r.Hash
	}
	if !cfg.Verify {
		oracle = nil
	}

	rep := &syncReport{Chain: chain, BlocksDir: blocksDir, Runs: cfg.Runs, Workers: cfg.Workers, BatchBlocks: cfg.BatchBlocks, Out: out, LoadBefore: procstat.LoadAverage()}
	extra := strings.Fields(cfg.Extra)
	var sp *spbench.Runner
	if cfg.SPCompare {
		_, fetch, closeAll, err := openNodeSource(ctx, node, prevouts.SourceOptions{Force: prevouts.ModeTxIndex})
		if err != nil {
			return nil, err
		}
		defer closeAll()
		sp = &spbench.Runner{Base: daemon.Run{Binary: bin, Node: node, TipHeight: chain.Height, Workers: cfg.Workers, BatchBlocks: cfg.BatchBlocks, Extra: extra},
			Out: out, Hashes: hashes, Fetch: fetch, Say: say}
		if oracle != nil {
			sp.Verify = func(dir string) error { return verifyDaemonStore(dir, node, oracle) }
		}
	}
	for _, src := range cfg.Sources {
		sr := sourceReport{Name: src.Name, Title: src.Title}
		spc := &spbench.Comparison{Source: src.Name, Title: src.Title}
		for i := range cfg.Runs {
			say("%s: cfindexd catch-up, run %d of %d", src.Name, i+1, cfg.Runs)
			dataDir := filepath.Join(work, fmt.Sprintf("cfindexd-%s-%d", src.Name, i))
			r, err := daemon.Measure(ctx, daemon.Run{
				Extra:       append(src.DaemonFlags(env), extra...),
				Binary:      bin,
				Node:        node,
				DataDir:     dataDir,
				LogPath:     filepath.Join(out, fmt.Sprintf("cfindexd-%s-run%d.log", src.Name, i+1)),
				TipHeight:   chain.Height,
				Workers:     cfg.Workers,
				BatchBlocks: cfg.BatchBlocks,
			})
			if err != nil {
				return nil, fmt.Errorf("%s: cfindexd run %d: %w", src.Name, i+1, err)
			}
			if oracle != nil {
				if err := verifyDaemonStore(dataDir, node, oracle); err != nil {
					return nil, fmt.Errorf("%s: cfindexd run %d: %w", src.Name, i+1, err)
				}
				r.Verified = true
			}
			say("  %s to the tip, CPU %s, btcd CPU %s, peak RSS %.1f MB (anon %.1f, file %.1f), GC live ≤ %.0f MB",
				dur(r.CatchUp), dur(r.CPU), dur(r.NodeCPU), mb(r.PeakRSS), mb(r.PeakAnon), mb(r.PeakFile), mb(r.GC.MaxLive))
			sr.Runs = append(sr.Runs, r)
			if sp != nil {
				if err := sp.Runs(ctx, spc, src.DaemonFlags(env), i, cfg.Runs, dataDir); err != nil {
					return nil, err
				}
			}
			os.RemoveAll(dataDir) // stores of a large chain add up
		}
		rep.Sources = append(rep.Sources, sr)
		if sp != nil {
			spc.Off = sr.Runs
			rep.SilentPay = append(rep.SilentPay, spc)
		}
	}

	if cfg.Profile {
		src := cfg.ProfileSource
		say("%s: in-process catch-up with the CPU profile", src.Name)
		prof, err := profileFollower(ctx, profileRun{
			Env:         env,
			Source:      src,
			StorePath:   filepath.Join(work, "inprocess.db"),
			ProfilePath: filepath.Join(out, "cpu.pprof"),
			Trace:       cfg.Trace,
			TipHeight:   chain.Height,
			Workers:     cfg.Workers,
			BatchBlocks: cfg.BatchBlocks,
			Oracle:      oracle,
			TopN:        cfg.TopN,
		})
		if err != nil {
			return nil, fmt.Errorf("in-process run: %w", err)
		}
		os.Remove(filepath.Join(work, "inprocess.db"))
		rep.InProcess = prof
	}

	if cfg.Fixture {
		say("blocksdir on the recorded Core v31 blocks directory, in process (hashes from its chain.json)")
		fx, err := measureFixture(ctx, work, cfg.Runs, cfg.Workers, cfg.BatchBlocks)
		if err != nil {
			return nil, err
		}
		say("  %d blocks (and %d stale ones) in %s; every filter and filter header equals Core's", fx.Blocks, fx.Stale, dur(fx.Wall))
		rep.Fixture = fx
	}

	avgBlock := chainBytes(chain, rep.InProcess) / int64(len(hashes))
	for si, src := range cfg.Sources {
		for i := range cfg.Runs * btoi(cfg.Floor) {
			say("%s: node serving floor (the same fetches, nothing built or stored), run %d of %d", src.Name, i+1, cfg.Runs)
			f, err := measureFloor(ctx, env, src, hashes, cfg.Workers, avgBlock)
			if err != nil {
				return nil, fmt.Errorf("%s: floor run %d: %w", src.Name, i+1, err)
			}
			say("  %s, CPU %s, btcd CPU %s", dur(f.Wall), dur(f.CPU), dur(f.NodeCPU))
			rep.Sources[si].Floor = append(rep.Sources[si].Floor, f)
		}
	}

	for i := range cfg.Runs * btoi(cfg.Rebuild) {
		say("btcd rebuilding its cfindex, run %d of %d", i+1, cfg.Runs)
		r, err := measureBtcdIndex(ctx, node)
		if err != nil {
			return nil, fmt.Errorf("btcd run %d: %w", i+1, err)
		}
		say("  %s (log: catching up → caught up), CPU %s, peak RSS %.1f MB", dur(r.CatchUp), dur(r.CPU), mb(r.PeakRSS))
		rep.Btcd = append(rep.Btcd, r)
	}
	if err := copyFile(node.LogPath(), filepath.Join(out, "btcd.out.log")); err != nil {
		return nil, err
	}
	rep.LoadAfter = procstat.LoadAverage()
	rep.summarize()
	return rep, nil
}

// btoi is 1 for true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// startSyncChain starts btcd on the chain cfg asks for.
func startSyncChain(ctx context.Context, cfg syncConfig, dataDir string, say func(string, ...any)) (*btcdtest.Node, chains.Info, error) {
	if cfg.Chain == chains.Rich {
		say("starting btcd (simnet, --txindex) and building %d tx-rich blocks", cfg.Blocks)
		return chains.Build(ctx, dataDir, cfg.Blocks, cfg.WalletSeed)
	}
	root := cfg.CacheRoot
	if root == "" {
		var err error
		if root, err = mainnetchain.CacheRoot(); err != nil {
			return nil, chains.Info{}, err
		}
	}
	say("mainnet-shaped chain: %d blocks of %d transactions (seed %d), cached under %s", cfg.Blocks, cfg.TxsPerBlock, cfg.WalletSeed, root)
	return chains.StartMainnet(ctx, root, dataDir, cfg.shape(), say)
}

// verifyDaemonStore compares the store a finished daemon run left in
// dataDir with btcd's index.
func verifyDaemonStore(dataDir string, node *btcdtest.Node, oracle []btcdtest.FilterRecord) error {
	path := filepath.Join(dataDir, node.Params().Name, "cfindexd.db")
	st, err := store.Open(path, *node.Params().GenesisHash, store.Options{Timeout: time.Second})
	if err != nil {
		return fmt.Errorf("open the run's store: %w", err)
	}
	defer st.Close()
	if err := btcdtest.CompareRecords(st, oracle); err != nil {
		return fmt.Errorf("store differs from btcd's index: %w", err)
	}
	return nil
}

// chainBytes is the size of the chain's serialized blocks: counted by
// the generator for a mainnet-shaped chain, by the in-process run
// otherwise (0 when neither is known).
func chainBytes(chain chains.Info, prof *profileResult) int64 {
	if chain.Mainnet != nil {
		return chain.Mainnet.ChainBytes
	}
	if prof != nil {
		return prof.BlockBytes
	}
	return 0
}

// outDir creates dir (or a new temporary directory when dir is empty).
func outDir(dir string) (string, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "cfbench-out-")
		if err != nil {
			return "", fmt.Errorf("out dir: %w", err)
		}
		return d, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("out dir: %w", err)
	}
	return filepath.Abs(dir)
}

// copyFile copies src to dst.
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	return nil
}

// mb converts bytes to megabytes (10^6).
func mb(b int64) float64 { return float64(b) / 1e6 }
