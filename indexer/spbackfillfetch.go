package indexer

import (
	"context"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"golang.org/x/sync/errgroup"

	"github.com/cfindexd/cfindexd/prevouts"
	"github.com/cfindexd/cfindexd/silentpay"
)

// fetch fills blocks with the silent-payment data of the active blocks
// from height from on, up to b.workers fetches at once. A source that
// fetches runs (runSource) gets them as the follower's catch-up does: runs
// sized by the blocks seen, turns in chain order so that its script cache
// learns every block before the runs after it ask for their spends, each
// block read in place. Any other source is asked block by block.
func (b *SPBackfill) fetch(ctx context.Context, from uint32, blocks []silentpay.Block) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(b.workers)
	builders := make(chan *silentpay.BlockBuilder, b.workers)
	for range b.workers {
		builders <- new(silentpay.BlockBuilder)
	}
	runner, runs := b.source.(runSource)
	order := prevouts.NewRunOrder()
	for i := 0; i < len(blocks); {
		n := 1
		if runs {
			n = min(b.sizer.next(maxRunBlocks), len(blocks)-i)
		}
		hashes := make([]chainhash.Hash, n)
		for j := range hashes {
			var err error
			if hashes[j], err = b.chain.HashAt(from + uint32(i+j)); err != nil {
				_ = g.Wait()
				return err
			}
		}
		at, first := i, from+uint32(i)
		i += n
		if !runs {
			g.Go(func() error {
				sb := <-builders
				defer func() { builders <- sb }()
				var err error
				blocks[at], err = b.fetchOne(gctx, sb, first, hashes[0])
				return err
			})
			continue
		}
		turn := order.Next()
		g.Go(func() error {
			sb := <-builders
			defer func() { builders <- sb }()
			return fetchRunBlocks(gctx, runner, &b.sizer, first, hashes, turn, func(h uint32, fb prevouts.FetchedBlock) error {
				blk, err := sb.Build(fb.Raw, fb.PrevScripts)
				if err != nil {
					return fmt.Errorf("silent payments of block %s (height %d): %w", fb.Hash, h, err)
				}
				blocks[at+int(h-first)] = blk
				return nil
			})
		})
	}
	return g.Wait()
}

// fetchOne fetches the block at height h, whose hash is hash, and builds
// its silent-payment data with sb.
func (b *SPBackfill) fetchOne(ctx context.Context, sb *silentpay.BlockBuilder, h uint32, hash chainhash.Hash) (silentpay.Block, error) {
	block, prevScripts, err := b.source.FetchBlock(ctx, hash)
	if err != nil {
		return silentpay.Block{}, fmt.Errorf("fetch block %s (height %d): %w", hash, h, err)
	}
	if got := block.BlockHash(); got != hash {
		return silentpay.Block{}, fmt.Errorf("fetch block %s (height %d): node returned block %s", hash, h, got)
	}
	blk, err := sb.BuildMsgBlock(block, prevScripts)
	if err != nil {
		return silentpay.Block{}, fmt.Errorf("silent payments of block %s (height %d): %w", hash, h, err)
	}
	return blk, nil
}
