package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/daemon"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/spbench"
	"github.com/cfindexd/cfindexd/netparams"
	"github.com/cfindexd/cfindexd/prevouts"
)

// spSamples is how many blocks with tweaks each index check recomputes
// from btcd's data.
const spSamples = 4

// spCompare measures, for -sp-compare, the catch-ups with the
// silent-payment index beside the sync benchmark's own runs without it,
// and the background build on a store built without it. Its fetcher reads
// btcd's blocks and spent scripts for the checks.
type spCompare struct {
	base    daemon.Run // Binary, Node, TipHeight, Workers, BatchBlocks and the extra flags of every run
	out     string
	env     syncEnv
	check   func(ctx context.Context, dataDir string) (spbench.IndexCheck, error)
	release func()
	// verified: the runs' filters are checked against btcd's (-verify).
	verified bool
}

// newSPCompare prepares the -sp-compare runs: base holds what every run
// shares, hashes are btcd's active chain from genesis to the tip. It opens
// btcd's blocks and spent scripts (txindex over JSON-RPC) for the checks
// of the index; release closes them.
func newSPCompare(ctx context.Context, base daemon.Run, out string, env syncEnv, hashes []chainhash.Hash, verified bool) (*spCompare, error) {
	params := env.Node.Params()
	nw, ok := netparams.ByMagic(params.Net)
	if !ok {
		return nil, fmt.Errorf("no network with btcd's magic %s", params.Net)
	}
	_, source, closeAll, err := openNodeSource(ctx, env.Node, prevouts.SourceOptions{Force: prevouts.ModeTxIndex})
	if err != nil {
		return nil, err
	}
	check := func(ctx context.Context, dataDir string) (spbench.IndexCheck, error) {
		path := filepath.Join(dataDir, params.Name, "cfindexd.db")
		return spbench.Check(ctx, path, *params.GenesisHash, nw.SilentPaymentsStart, hashes, source, spSamples)
	}
	return &spCompare{base: base, out: out, env: env, check: check, release: closeAll, verified: verified}, nil
}

// runs follows the sync benchmark's run i (of n) of src without the index,
// whose store is in offDir, with a run with the index on; after the last,
// it times the background build on offDir's store.
func (s *spCompare) runs(ctx context.Context, c *spbench.Comparison, src syncSource, i, n int, offDir string, verify func(string) error, say func(string, ...any)) error {
	say("%s: cfindexd catch-up with the silent-payment index, run %d of %d", src.Name, i+1, n)
	if err := s.on(ctx, c, src, i, offDir+"-sp", verify); err != nil {
		return err
	}
	r, k := c.On[i], c.Checks[i]
	say("  %s to the tip, CPU %s, btcd CPU %s, peak RSS %.1f MB; index complete, %d tweaks, %d sampled blocks equal btcd's data",
		dur(r.CatchUp), dur(r.CPU), dur(r.NodeCPU), mb(r.PeakRSS), k.Tweaks, len(k.Sampled))
	if i < n-1 {
		return nil
	}
	say("%s: background build of the index on the store built without it", src.Name)
	if err := s.backfill(ctx, c, src, offDir); err != nil {
		return err
	}
	say("  %d blocks in %s, CPU %s, peak RSS %.1f MB", c.BackfillCheck.Blocks, dur(c.Backfill.CatchUp), dur(c.Backfill.CPU), mb(c.Backfill.PeakRSS))
	return nil
}

// on runs cfindexd with the index on from an empty datadir (run i of
// src), checks the filters (oracle) and the index, and appends the run to
// c.
func (s *spCompare) on(ctx context.Context, c *spbench.Comparison, src syncSource, i int, dataDir string, verify func(string) error) error {
	run := s.base
	run.Extra = append(append(src.DaemonFlags(s.env), s.base.Extra...), "--silentpayments=true")
	run.DataDir = dataDir
	run.LogPath = filepath.Join(s.out, fmt.Sprintf("cfindexd-%s-sp-run%d.log", src.Name, i+1))
	r, err := daemon.Measure(ctx, run)
	if err != nil {
		return fmt.Errorf("%s: cfindexd run %d with the index: %w", src.Name, i+1, err)
	}
	defer os.RemoveAll(dataDir)
	if err := verify(dataDir); err != nil {
		return fmt.Errorf("%s: cfindexd run %d with the index: %w", src.Name, i+1, err)
	}
	r.Verified = s.verified
	k, err := s.check(ctx, dataDir)
	if err != nil {
		return fmt.Errorf("%s: run %d's silent-payment index: %w", src.Name, i+1, err)
	}
	c.On, c.Checks = append(c.On, r), append(c.Checks, k)
	return nil
}

// backfill restarts cfindexd with the index on over dataDir, a store a
// run without it left at the tip, until the background build reports the
// tip, and checks the index it built.
func (s *spCompare) backfill(ctx context.Context, c *spbench.Comparison, src syncSource, dataDir string) error {
	run := s.base
	run.Extra = append(append(src.DaemonFlags(s.env), s.base.Extra...), "--silentpayments=true")
	run.DataDir = dataDir
	run.LogPath = filepath.Join(s.out, fmt.Sprintf("cfindexd-%s-sp-backfill.log", src.Name))
	run.Done = func(l daemon.LogLine) bool { return l.SPIndexedTo(s.base.TipHeight) }
	r, err := daemon.Measure(ctx, run)
	if err != nil {
		return fmt.Errorf("%s: background build of the index: %w", src.Name, err)
	}
	k, err := s.check(ctx, dataDir)
	if err != nil {
		return fmt.Errorf("%s: the background build's index: %w", src.Name, err)
	}
	c.Backfill, c.BackfillCheck = &r, &k
	return nil
}
