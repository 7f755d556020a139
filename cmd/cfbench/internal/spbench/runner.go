package spbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/daemon"
	"github.com/cfindexd/cfindexd/netparams"
)

// Samples is how many blocks with tweaks each index check recomputes from
// btcd's data.
const Samples = 4

// Runner measures, for `cfbench sync -sp-compare`, the catch-ups with the
// silent-payment index beside the sync benchmark's own runs without it,
// and the background build on a store built without it.
type Runner struct {
	// Base holds what every run shares: Binary, Node, TipHeight,
	// Workers, BatchBlocks and the extra flags.
	Base daemon.Run
	// Out receives the runs' logs.
	Out string
	// Hashes are btcd's active chain from genesis to the tip; Fetch reads
	// btcd's blocks and spent scripts for the checks.
	Hashes []chainhash.Hash
	Fetch  BlockFetcher
	// Verify checks a run's filters against btcd's (nil: not checked).
	Verify func(dataDir string) error
	// Say logs progress.
	Say func(format string, a ...any)
}

// Runs follows the sync benchmark's run i (of n) of a source without the
// index, whose store is in offDir, with a run with the index on into an
// empty datadir; after the last, it times the background build on offDir's
// store. flags select the source; c collects the results.
func (s *Runner) Runs(ctx context.Context, c *Comparison, flags []string, i, n int, offDir string) error {
	s.Say("%s: cfindexd catch-up with the silent-payment index, run %d of %d", c.Source, i+1, n)
	onDir := offDir + "-sp"
	defer os.RemoveAll(onDir)
	r, err := daemon.Measure(ctx, s.run(flags, onDir, fmt.Sprintf("cfindexd-%s-sp-run%d.log", c.Source, i+1)))
	if err != nil {
		return fmt.Errorf("%s: cfindexd run %d with the index: %w", c.Source, i+1, err)
	}
	if s.Verify != nil {
		if err := s.Verify(onDir); err != nil {
			return fmt.Errorf("%s: cfindexd run %d with the index: %w", c.Source, i+1, err)
		}
		r.Verified = true
	}
	k, err := s.check(ctx, onDir)
	if err != nil {
		return fmt.Errorf("%s: run %d's silent-payment index: %w", c.Source, i+1, err)
	}
	c.On, c.Checks = append(c.On, r), append(c.Checks, k)
	s.Say("  %s to the tip, CPU %s, btcd CPU %s, peak RSS %.1f MB; index complete, %d tweaks, %d sampled blocks equal btcd's data",
		dur(r.CatchUp), dur(r.CPU), dur(r.NodeCPU), mb(r.PeakRSS), k.Tweaks, len(k.Sampled))
	if i < n-1 {
		return nil
	}
	s.Say("%s: background build of the index on the store built without it", c.Source)
	run := s.run(flags, offDir, fmt.Sprintf("cfindexd-%s-sp-backfill.log", c.Source))
	run.Done = func(l daemon.LogLine) bool { return l.SPIndexedTo(s.Base.TipHeight) }
	b, err := daemon.Measure(ctx, run)
	if err != nil {
		return fmt.Errorf("%s: background build of the index: %w", c.Source, err)
	}
	bk, err := s.check(ctx, offDir)
	if err != nil {
		return fmt.Errorf("%s: the background build's index: %w", c.Source, err)
	}
	c.Backfill, c.BackfillCheck = &b, &bk
	s.Say("  %d blocks in %s, CPU %s, peak RSS %.1f MB", bk.Blocks, dur(b.CatchUp), dur(b.CPU), mb(b.PeakRSS))
	return nil
}

// run is Base with the index on, the source's flags, dataDir and a log
// named logName in Out.
func (s *Runner) run(flags []string, dataDir, logName string) daemon.Run {
	run := s.Base
	run.Extra = append(append(append([]string(nil), flags...), s.Base.Extra...), "--silentpayments=true")
	run.DataDir = dataDir
	run.LogPath = filepath.Join(s.Out, logName)
	return run
}

// check checks the index of the store a run left in dataDir.
func (s *Runner) check(ctx context.Context, dataDir string) (IndexCheck, error) {
	params := s.Base.Node.Params()
	nw, ok := netparams.ByMagic(params.Net)
	if !ok {
		return IndexCheck{}, fmt.Errorf("no network with btcd's magic %s", params.Net)
	}
	path := filepath.Join(dataDir, params.Name, "cfindexd.db")
	return Check(ctx, path, *params.GenesisHash, nw.SilentPaymentsStart, s.Hashes, s.Fetch, Samples)
}
