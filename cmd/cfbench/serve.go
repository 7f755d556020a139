package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/chains"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/daemon"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/load"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/procstat"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/selfprofile"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
)

// serveConfig holds the flags of the serve subcommand.
type serveConfig struct {
	commonFlags
	Peers       int
	Duration    time.Duration
	Warmup      time.Duration
	FilterShare float64
	Seed        uint64
	ReqTimeout  time.Duration
	// Baseline is another cfindexd binary measured in the same run,
	// alternating with the one under test, Rounds times each.
	Baseline string
	Rounds   int
}

// parseServeFlags parses and validates the serve subcommand's flags.
func parseServeFlags(args []string, stderr io.Writer) (serveConfig, error) {
	var c serveConfig
	fs := flag.NewFlagSet("cfbench serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs, 2000, 20*time.Minute)
	fs.IntVar(&c.Peers, "peers", 100, "concurrent peers, each with one request in flight")
	fs.DurationVar(&c.Duration, "duration", 20*time.Second, "measured window per server")
	fs.DurationVar(&c.Warmup, "warmup", 2*time.Second, "load before the window, not counted")
	fs.Float64Var(&c.FilterShare, "filtershare", 0.5, "fraction of requests that are getcfilters (1,000 blocks); the rest are getcfheaders (2,000 blocks)")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of every peer's sequence of ranges (the same for both servers)")
	fs.DurationVar(&c.ReqTimeout, "reqtimeout", 30*time.Second, "bound on one request's whole answer; a peer that hits it stops and is counted as an error")
	fs.StringVar(&c.Baseline, "baseline", "", "another cfindexd binary (an older build) to measure in the same run, alternating with the one under test")
	fs.IntVar(&c.Rounds, "rounds", 1, "measurements of cfindexd (and of -baseline, alternating) whose median is reported")
	if err := parseFlagSet(fs, args); err != nil {
		return c, err
	}
	return c, c.validate()
}

// validate checks the flags' ranges.
func (c serveConfig) validate() error {
	switch {
	case c.Peers < 1 || c.Peers > 1000:
		return fmt.Errorf("%w: -peers %d is outside 1..1000", errUsage, c.Peers)
	case c.Duration < 100*time.Millisecond:
		return fmt.Errorf("%w: -duration %s is under 100ms", errUsage, c.Duration)
	case c.Warmup < 0:
		return fmt.Errorf("%w: -warmup %s is negative", errUsage, c.Warmup)
	case c.FilterShare < 0 || c.FilterShare > 1:
		return fmt.Errorf("%w: -filtershare %g is outside 0..1", errUsage, c.FilterShare)
	case c.ReqTimeout <= 0:
		return fmt.Errorf("%w: -reqtimeout %s must be positive", errUsage, c.ReqTimeout)
	case c.Rounds < 1 || c.Rounds > 50:
		return fmt.Errorf("%w: -rounds %d is outside 1..50", errUsage, c.Rounds)
	}
	if c.Baseline != "" {
		if fi, err := os.Stat(c.Baseline); err != nil || fi.IsDir() {
			return fmt.Errorf("%w: -baseline %s is not a file", errUsage, c.Baseline)
		}
	}
	return c.commonFlags.validate()
}

// runServe is the serve subcommand: the same chain served by cfindexd and
// by btcd to the same load of peers, one server after the other.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runSubcommand(ctx, args, stdout, stderr, parseServeFlags, benchServe)
}

// benchServe runs the serve benchmark, logging progress to logw.
func benchServe(ctx context.Context, cfg serveConfig, logw io.Writer) (*serveReport, error) {
	say := func(format string, a ...any) { fmt.Fprintf(logw, "cfbench: "+format+"\n", a...) }
	ws, err := newWorkspace(ctx, "serve", cfg.Keep, cfg.Out, cfg.CFIndexd, say)
	if err != nil {
		return nil, err
	}
	defer ws.cleanup()
	work, out, bin := ws.work, ws.out, ws.binary

	// btcd counts outbound slots (8 by default) against --maxpeers.
	btcdMaxPeers := "--maxpeers=" + strconv.Itoa(cfg.Peers+50)
	say("starting btcd (simnet, --txindex, %s) and building %d tx-rich blocks", btcdMaxPeers, cfg.Blocks)
	node, chain, err := chains.Build(ctx, filepath.Join(work, "btcd"), cfg.Blocks, cfg.WalletSeed, btcdMaxPeers)
	if node != nil {
		defer node.Stop()
	}
	if err != nil {
		return nil, err
	}
	say("chain: %d blocks; restarting btcd so its peak RSS covers serving only", chain.Height+1)
	if err := node.Stop(); err != nil {
		return nil, fmt.Errorf("stop btcd: %w", err)
	}
	if err := node.Launch(); err != nil {
		return nil, fmt.Errorf("restart btcd: %w", err)
	}
	hashes, err := chainHashes(ctx, node, chain.Height)
	if err != nil {
		return nil, err
	}

	say("fetching btcd's %d filters: every answer is checked against them", len(hashes))
	expected, err := load.BuildExpected(ctx, node, node.Params(), hashes)
	if err != nil {
		return nil, err
	}

	serve := func(name, binary string) (*daemon.Proc, string, error) {
		addr, err := freeLoopbackAddr()
		if err != nil {
			return nil, "", err
		}
		limit := strconv.Itoa(cfg.Peers + 10)
		run := daemon.Run{
			Binary:      binary,
			Node:        node,
			DataDir:     filepath.Join(work, name+"-data"),
			LogPath:     filepath.Join(out, name+".log"),
			TipHeight:   chain.Height,
			Workers:     8,
			BatchBlocks: 500,
			Extra:       []string{"--listen=" + addr, "--maxpeers=" + limit, "--maxpeersperip=" + limit, "--maxpeerspersubnet=" + limit},
		}
		say("%s: catching up, then serving on %s", name, addr)
		proc, err := daemon.Start(ctx, run)
		if err != nil {
			return nil, "", err
		}
		if _, err := proc.WaitFor(ctx, func(l daemon.LogLine) bool { return l.ReachedHeight(chain.Height) }); err != nil {
			proc.Kill()
			return nil, "", fmt.Errorf("%s: %w", name, err)
		}
		return proc, addr, nil
	}
	proc, addr, err := serve("cfindexd", bin)
	if err != nil {
		return nil, err
	}
	defer proc.Kill()
	var (
		base     *daemon.Proc
		baseAddr string
	)
	if cfg.Baseline != "" {
		if base, baseAddr, err = serve("baseline", cfg.Baseline); err != nil {
			return nil, err
		}
		defer base.Kill()
	}

	lcfg := load.Config{
		Params:         node.Params(),
		Hashes:         hashes,
		Expected:       expected,
		Peers:          cfg.Peers,
		Warmup:         cfg.Warmup,
		Duration:       cfg.Duration,
		FilterShare:    cfg.FilterShare,
		Seed:           cfg.Seed,
		RequestTimeout: cfg.ReqTimeout,
	}
	rep := &serveReport{Chain: chain, Out: out, LoadBefore: procstat.LoadAverage(), BaselineBinary: cfg.Baseline}
	measure := func(name, addr string, pid int, runs *[]load.Result) error {
		say("load on %s: %d peers, %s warm-up, %s measured", name, cfg.Peers, cfg.Warmup, cfg.Duration)
		res, err := measureLoad(ctx, lcfg, addr, pid)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		*runs = append(*runs, res)
		return nil
	}
	for round := range cfg.Rounds {
		// Alternate which goes first, so that a drift of the machine's
		// speed during a round favours neither.
		first, second := func() error {
			return measure("cfindexd", addr, proc.Pid(), &rep.CFIndexdRuns)
		}, func() error {
			if base == nil {
				return nil
			}
			return measure("baseline", baseAddr, base.Pid(), &rep.BaselineRuns)
		}
		if round%2 == 1 {
			first, second = second, first
		}
		if err := first(); err != nil {
			return nil, err
		}
		if err := second(); err != nil {
			return nil, err
		}
	}
	say("load on btcd: %d peers, %s warm-up, %s measured", cfg.Peers, cfg.Warmup, cfg.Duration)
	if rep.Btcd, err = measureLoad(ctx, lcfg, node.P2PAddr(), node.PID()); err != nil {
		return nil, fmt.Errorf("btcd: %w", err)
	}
	rep.BtcdPeakRSS = procstat.PeakRSS(node.PID())

	hwm := procstat.PeakRSS(proc.Pid())
	state, err := proc.Terminate(daemon.StopLimit)
	if err != nil {
		return nil, err
	}
	rep.CFIndexdPeakRSS = procstat.ChildPeakRSS(hwm, state)
	if base != nil {
		hwm := procstat.PeakRSS(base.Pid())
		state, err := base.Terminate(daemon.StopLimit)
		if err != nil {
			return nil, err
		}
		rep.BaselinePeakRSS = procstat.ChildPeakRSS(hwm, state)
	}
	if err := copyFile(node.LogPath(), filepath.Join(out, "btcd.out.log")); err != nil {
		return nil, err
	}
	rep.LoadAfter = procstat.LoadAverage()
	rep.summarize()
	return rep, nil
}

// measureLoad runs the load against addr and adds the server's CPU time
// (process pid) and the load generator's own (this process) over the run,
// and both per filter served.
func measureLoad(ctx context.Context, cfg load.Config, addr string, pid int) (load.Result, error) {
	cfg.Addr = addr
	cpu0, self0, start := procstat.CPU(pid), selfprofile.SelfCPU(), time.Now()
	res, err := load.Run(ctx, cfg)
	if err != nil {
		return res, err
	}
	wall := time.Since(start).Seconds()
	res.ServerCPU, res.ClientCPU = procstat.CPU(pid)-cpu0, selfprofile.SelfCPU()-self0
	res.ServerCPUShare, res.ClientCPUShare = res.ServerCPU.Seconds()/wall, res.ClientCPU.Seconds()/wall
	if res.RunFilters > 0 {
		res.ServerNsPerFilter = float64(res.ServerCPU.Nanoseconds()) / float64(res.RunFilters)
		res.ClientNsPerFilter = float64(res.ClientCPU.Nanoseconds()) / float64(res.RunFilters)
	}
	return res, nil
}

// chainHashes asks the node for the hash of every block up to height.
func chainHashes(ctx context.Context, node *btcdtest.Node, height uint32) ([]chainhash.Hash, error) {
	hashes := make([]chainhash.Hash, height+1)
	for h := range hashes {
		var err error
		if hashes[h], err = node.BlockHash(ctx, int32(h)); err != nil {
			return nil, fmt.Errorf("block hash at %d: %w", h, err)
		}
	}
	return hashes, nil
}

// freeLoopbackAddr returns 127.0.0.1:<port> with a port nothing listens on.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("reserve port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}
