package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// syncConfig holds the flags of the sync subcommand.
type syncConfig struct {
	commonFlags
	// Runs repeats each measurement; the report shows the median.
	Runs int
	// Workers and BatchBlocks are passed to cfindexd (--workers,
	// --batchblocks) and to the in-process follower.
	Workers     int
	BatchBlocks int
	// Verify compares the in-process store with btcd's own filters.
	Verify bool
	// TopN is how many lines of the CPU profile's top the table shows.
	TopN int
	// NodeP2P makes cfindexd fetch raw blocks over btcd's P2P port
	// (--nodep2p) in both the daemon and the in-process runs.
	NodeP2P bool
}

// parseSyncFlags parses and validates the sync subcommand's flags.
func parseSyncFlags(args []string, stderr io.Writer) (syncConfig, error) {
	var c syncConfig
	fs := flag.NewFlagSet("cfbench sync", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs)
	fs.IntVar(&c.Runs, "runs", 3, "times to repeat each catch-up measurement on the same chain; the report shows the median")
	fs.IntVar(&c.Workers, "workers", 8, "cfindexd --workers")
	fs.IntVar(&c.BatchBlocks, "batchblocks", 500, "cfindexd --batchblocks")
	fs.BoolVar(&c.Verify, "verify", true, "check every filter and filter header of the in-process run against btcd's")
	fs.IntVar(&c.TopN, "top", 20, "lines of the CPU profile's top to print")
	fs.BoolVar(&c.NodeP2P, "nodep2p", true, "fetch raw blocks over btcd's P2P port (cfindexd --nodep2p); false = JSON-RPC only")
	if err := parseFlagSet(fs, args); err != nil {
		return c, err
	}
	return c, c.validate()
}

// validate checks the flags' ranges.
func (c syncConfig) validate() error {
	switch {
	case c.Runs < 1 || c.Runs > 20:
		return fmt.Errorf("%w: -runs %d is outside 1..20", errUsage, c.Runs)
	case c.Workers < 1 || c.Workers > 64:
		return fmt.Errorf("%w: -workers %d is outside 1..64 (cfindexd's range)", errUsage, c.Workers)
	case c.BatchBlocks < 1 || c.BatchBlocks > 10_000:
		return fmt.Errorf("%w: -batchblocks %d is outside 1..10000 (cfindexd's range)", errUsage, c.BatchBlocks)
	case c.TopN < 0:
		return fmt.Errorf("%w: -top %d is negative", errUsage, c.TopN)
	}
	return c.commonFlags.validate()
}

// runSync is the sync subcommand: build the chain, measure cfindexd's
// catch-up as a subprocess, profile the same catch-up in process, then drop
// btcd's cfindex and time btcd rebuilding it, and report.
func runSync(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseSyncFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	rep, err := benchSync(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	if cfg.JSON {
		return writeJSON(stdout, rep)
	}
	return rep.writeTable(stdout)
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

	say("starting btcd (simnet, --txindex) and building %d tx-rich blocks", cfg.Blocks)
	node, chain, err := buildChain(ctx, filepath.Join(work, "btcd"), cfg.Blocks, cfg.WalletSeed)
	if node != nil {
		defer node.Stop()
	}
	if err != nil {
		return nil, err
	}
	say("chain: %d blocks (tip %s) in %s", chain.Height, chain.Tip, chain.BuildTime.Round(time.Millisecond))

	rep := &syncReport{Chain: chain, Workers: cfg.Workers, BatchBlocks: cfg.BatchBlocks, Out: out, LoadBefore: loadAverage()}
	for i := range cfg.Runs {
		say("cfindexd catch-up, run %d of %d", i+1, cfg.Runs)
		var extra []string
		if cfg.NodeP2P {
			extra = []string{"--nodep2p=" + node.P2PAddr()}
		}
		r, err := measureDaemon(ctx, daemonRun{
			Extra:       extra,
			Binary:      bin,
			Node:        node,
			DataDir:     filepath.Join(work, fmt.Sprintf("cfindexd-%d", i)),
			LogPath:     filepath.Join(out, fmt.Sprintf("cfindexd-run%d.log", i+1)),
			TipHeight:   chain.Height,
			Workers:     cfg.Workers,
			BatchBlocks: cfg.BatchBlocks,
		})
		if err != nil {
			return nil, fmt.Errorf("cfindexd run %d: %w", i+1, err)
		}
		say("  %s to the tip, CPU %s, peak RSS %.1f MB", r.CatchUp.Round(time.Millisecond), r.CPU.Round(time.Millisecond), mb(r.PeakRSS))
		rep.Daemon = append(rep.Daemon, r)
	}

	say("in-process catch-up with the CPU profile")
	prof, err := profileFollower(ctx, profileRun{
		Node:        node,
		StorePath:   filepath.Join(work, "inprocess.db"),
		ProfilePath: filepath.Join(out, "cpu.pprof"),
		TipHeight:   chain.Height,
		Workers:     cfg.Workers,
		BatchBlocks: cfg.BatchBlocks,
		Verify:      cfg.Verify,
		TopN:        cfg.TopN,
		NodeP2P:     cfg.NodeP2P,
	})
	if err != nil {
		return nil, fmt.Errorf("in-process run: %w", err)
	}
	rep.InProcess = prof

	for i := range cfg.Runs {
		say("node serving floor (the same fetches, nothing built or stored), run %d of %d", i+1, cfg.Runs)
		f, err := measureFloor(ctx, node, chain.Height, cfg.Workers, cfg.NodeP2P)
		if err != nil {
			return nil, fmt.Errorf("floor run %d: %w", i+1, err)
		}
		say("  %s, CPU %s, btcd CPU %s", f.Wall.Round(time.Millisecond), f.CPU.Round(time.Millisecond), f.NodeCPU.Round(time.Millisecond))
		rep.Floor = append(rep.Floor, f)
	}

	for i := range cfg.Runs {
		say("btcd rebuilding its cfindex, run %d of %d", i+1, cfg.Runs)
		r, err := measureBtcdIndex(ctx, node)
		if err != nil {
			return nil, fmt.Errorf("btcd run %d: %w", i+1, err)
		}
		say("  %s (log: catching up → caught up)", r.CatchUp.Round(time.Millisecond))
		rep.Btcd = append(rep.Btcd, r)
	}
	if err := copyFile(node.LogPath(), filepath.Join(out, "btcd.out.log")); err != nil {
		return nil, err
	}
	rep.LoadAfter = loadAverage()
	rep.summarize()
	return rep, nil
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
