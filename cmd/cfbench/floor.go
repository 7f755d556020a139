package main

import (
	"context"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"golang.org/x/sync/errgroup"

	"github.com/cfindexd/cfindexd/bitcoind"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
)

// floorRunBlocks is the run length of the floor's fetches: the indexer's
// longest run (maxRunBlocks), which is what it uses for blocks of this
// chain's size.
const floorRunBlocks = 16

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
}

// measureFloor fetches blocks 0..tip of node as the follower would, with
// workers concurrent runs, and times it.
func measureFloor(ctx context.Context, node *btcdtest.Node, tip uint32, workers int, nodeP2P bool) (floorResult, error) {
	hashes, err := chainHashes(ctx, node, tip)
	if err != nil {
		return floorResult{}, err
	}
	_, runs, closeAll, err := connectRunSource(ctx, node, nodeP2P)
	if err != nil {
		return floorResult{}, err
	}
	defer closeAll()

	type job struct {
		hashes []chainhash.Hash
		turn   *bitcoind.RunTurn
	}
	cpu0, nodeCPU0 := selfCPU(), processCPU(node.PID())
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	jobs := make(chan job)
	g.Go(func() error {
		defer close(jobs)
		order := bitcoind.NewRunOrder()
		for i := 0; i < len(hashes); i += floorRunBlocks {
			select {
			case jobs <- job{hashes: hashes[i:min(i+floorRunBlocks, len(hashes))], turn: order.Next()}:
			case <-gctx.Done():
				return nil
			}
		}
		return nil
	})
	for range workers {
		g.Go(func() error {
			for j := range jobs {
				if _, err := runs.FetchBlocks(gctx, j.hashes, j.turn); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return floorResult{}, fmt.Errorf("fetch: %w", err)
	}
	return floorResult{Wall: time.Since(start), CPU: selfCPU() - cpu0, NodeCPU: processCPU(node.PID()) - nodeCPU0}, nil
}
