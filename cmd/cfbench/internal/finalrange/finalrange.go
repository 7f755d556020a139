// Package finalrange is the setting cfbench's publish and replica
// benchmarks share: the cached mainnet-shaped chain (copied, never
// generated here), extended with empty blocks until its first 2,000-block
// range is final under a small reorg safety depth, and a primary
// cfindexd's catch-up of it from an empty store, timed.
package finalrange

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/chains"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/daemon"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/btcdtest/mainnetchain"
	"github.com/cfindexd/cfindexd/rangefile"
)

// Depth is the reorg safety depth of the runs: the smallest cfindexd
// takes, so that few empty blocks make the first range final.
const Depth = 6

// SafetyFlag is cfindexd's flag for Depth.
var SafetyFlag = "--reorgsafetydepth=" + strconv.Itoa(Depth)

// ErrNotCached is returned when the chain is not in the cache: these
// benchmarks never generate it (an hour; cfbench sync does).
var ErrNotCached = errors.New("the mainnet-shaped chain is not cached; run cfbench sync once to generate it")

// Options are a run's flags: where the chain is cached, its shape, and
// the cfindexd binary.
type Options struct {
	Cache  string
	Shape  mainnetchain.Shape
	Binary string
}

// Parse reads a subcommand's flags (the chain's shape and cache, a
// prebuilt binary) from args; the cache defaults to the user cache
// directory's cfindexd-bench.
func Parse(name string, args []string, stderr io.Writer) (Options, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cache := fs.String("cache", "", "where mainnet-shaped chains are cached (default: the user cache directory's cfindexd-bench); the chain must be there")
	blocks := fs.Int("blocks", 500, "tx-rich blocks of the cached mainnet-shaped chain")
	txs := fs.Int("txs", 2000, "transactions per block of the cached mainnet-shaped chain")
	seed := fs.Int64("walletseed", 1, "wallet seed of the cached mainnet-shaped chain")
	bin := fs.String("cfindexd", "", "a prebuilt cfindexd binary (default: build ./cmd/cfindexd)")
	if err := fs.Parse(args); err != nil {
		return Options{}, err
	}
	if *cache == "" {
		dir, err := mainnetchain.CacheRoot()
		if err != nil {
			return Options{}, err
		}
		*cache = dir
	}
	return Options{Cache: *cache, Shape: mainnetchain.Shape{Blocks: *blocks, TxsPerBlock: *txs, Seed: *seed}, Binary: *bin}, nil
}

// RunCommand parses the subcommand name's flags from args, runs measure
// with progress lines on stderr and prints its report on stdout.
func RunCommand[R interface{ Print(io.Writer) }](ctx context.Context, name string, args []string, stdout, stderr io.Writer,
	measure func(context.Context, Options, func(string, ...any)) (R, error)) error {
	o, err := Parse(name, args, stderr)
	if err != nil {
		return err
	}
	rep, err := measure(ctx, o, Say(stderr))
	if err != nil {
		return err
	}
	rep.Print(stdout)
	return nil
}

// Say is the benchmarks' progress line on stderr.
func Say(stderr io.Writer) func(string, ...any) {
	return func(format string, a ...any) { fmt.Fprintf(stderr, "cfbench: "+format+"\n", a...) }
}

// Setup is a run's chain and primary: the node serving the extended copy,
// its tip, the primary's data directory after its catch-up, and how long
// the catch-up took. Close stops the node and removes Work.
type Setup struct {
	Work       string
	Binary     string
	Node       *btcdtest.Node
	Tip        uint32
	PrimaryDir string
	CatchUp    time.Duration
}

// Close stops the node and removes the work directory.
func (s *Setup) Close() {
	if s.Node != nil {
		s.Node.Stop()
	}
	os.RemoveAll(s.Work)
}

// Prepare copies the cached chain into a new work directory named after
// prefix, builds cfindexd unless o names a binary, extends the chain so
// that its first range is final at Depth, and times a primary's catch-up
// of it into PrimaryDir. The Setup is returned with an error too when it
// holds something to Close.
func Prepare(ctx context.Context, o Options, prefix string, say func(string, ...any)) (*Setup, error) {
	if !mainnetchain.Cached(o.Cache, o.Shape) {
		return nil, ErrNotCached
	}
	work, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	s := &Setup{Work: work, Binary: o.Binary}
	if s.Binary == "" {
		say("building cfindexd")
		if s.Binary, err = daemon.Build(ctx, work); err != nil {
			return s, err
		}
	}
	node, info, err := chains.StartMainnet(ctx, o.Cache, filepath.Join(work, "btcd"), o.Shape, say)
	s.Node = node
	if err != nil {
		return s, err
	}
	tip := uint32(rangefile.Size - 1 + Depth)
	if info.Height < tip {
		say("extending the copy with %d empty blocks to height %d (the first range final)", tip-info.Height, tip)
		if _, err := node.Generate(ctx, int(tip-info.Height)); err != nil {
			return s, err
		}
	} else {
		tip = info.Height
	}
	s.Tip = tip
	s.PrimaryDir = filepath.Join(work, "primary")
	say("primary catch-up to %d", tip)
	res, err := daemon.Measure(ctx, s.Run(s.PrimaryDir, "catchup.log"))
	if err != nil {
		return s, err
	}
	s.CatchUp = res.CatchUp
	return s, nil
}

// Run is a daemon run of the setup's binary on its node into dataDir,
// logging to logName in the work directory, at Depth; extra flags follow.
func (s *Setup) Run(dataDir, logName string, extra ...string) daemon.Run {
	return daemon.Run{Binary: s.Binary, Node: s.Node, DataDir: dataDir, LogPath: filepath.Join(s.Work, logName),
		TipHeight: s.Tip, Workers: 8, BatchBlocks: 500, Extra: append([]string{SafetyFlag}, extra...)}
}
