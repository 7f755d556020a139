package main

import (
	"context"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"golang.org/x/sync/errgroup"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/procstat"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/selfprofile"
	"github.com/cfindexd/cfindexd/prevouts"
)

// floorRunBlocks is the run length of the floor's fetches: the indexer's
// longest run (maxRunBlocks). The indexer sizes runs to about 2 MB of
// blocks, so for blocks of the mainnet-shaped chain it fetches two or
// three at a time; floorRunBytes does the same here.
const (
	floorRunBlocks = 16
	floorRunBytes  = 2 << 20
)

// floorResult is the node's serving floor: every block of the chain and
// its spent scripts fetched the way the catch-up fetches them (same
// source, runs, workers and turns), with nothing filtered or stored. A
// catch-up that takes about as long is bounded by the node, not by
// cfindexd.
type floorResult struct {
	Wall time.Duration `json:"wall_ns"`
	// CPU is this process's CPU over Wall: reading and checking blocks
	// and resolving spends, the part of cfindexd's work that no catch-up
	// can skip.
	CPU time.Duration `json:"cpu_ns"`
	// NodeCPU is btcd's CPU over Wall (Linux; zero elsewhere).
	NodeCPU time.Duration `json:"node_cpu_ns"`
	// FromCache and FromNode count the spent scripts the source resolved
	// from its script cache and by asking the node (txindex sources).
	FromCache uint64 `json:"prevouts_from_cache"`
	FromNode  uint64 `json:"prevouts_from_node"`
}

// measureFloor fetches the blocks of hashes (the chain from genesis) with the source as the follower
// would, with workers concurrent runs (one block each when the source
// cannot fetch runs), and times it.
func measureFloor(ctx context.Context, env syncEnv, src syncSource, hashes []chainhash.Hash, workers int, avgBlockBytes int64) (floorResult, error) {
	_, source, closeAll, err := src.Open(ctx, env)
	if err != nil {
		return floorResult{}, err
	}
	defer closeAll()
	runs, isRuns := source.(prevouts.RunBlockSource)
	runLen := 1
	if isRuns {
		runLen = floorRunBlocks
		if avgBlockBytes > 0 {
			runLen = int(max(1, min(floorRunBlocks, floorRunBytes/avgBlockBytes)))
		}
	}

	type job struct {
		hashes []chainhash.Hash
		turn   *prevouts.RunTurn
	}
	cpu0, nodeCPU0 := selfprofile.SelfCPU(), procstat.CPU(env.Node.PID())
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	jobs := make(chan job)
	g.Go(func() error {
		defer close(jobs)
		order := prevouts.NewRunOrder()
		for i := 0; i < len(hashes); i += runLen {
			select {
			case jobs <- job{hashes: hashes[i:min(i+runLen, len(hashes))], turn: order.Next()}:
			case <-gctx.Done():
				return nil
			}
		}
		return nil
	})
	for range workers {
		g.Go(func() error {
			for j := range jobs {
				if isRuns {
					// A source may return a prefix of the run; the
					// follower fetches the rest with the same turn, and
					// so does the floor.
					for rest := j.hashes; len(rest) > 0; {
						got, err := runs.FetchBlocks(gctx, rest, j.turn)
						if err != nil {
							j.turn.Done()
							return err
						}
						if len(got) == 0 {
							j.turn.Done()
							return fmt.Errorf("fetch: no block of %d returned", len(rest))
						}
						rest = rest[len(got):]
					}
					continue
				}
				j.turn.Done()
				for _, h := range j.hashes {
					if _, _, err := source.FetchBlock(gctx, h); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return floorResult{}, fmt.Errorf("fetch: %w", err)
	}
	res := floorResult{Wall: time.Since(start), CPU: selfprofile.SelfCPU() - cpu0, NodeCPU: procstat.CPU(env.Node.PID()) - nodeCPU0}
	if c, ok := source.(prevouts.PrevoutCounter); ok {
		res.FromCache, res.FromNode = c.PrevoutCounts()
	}
	return res, nil
}
