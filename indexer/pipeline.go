package indexer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"golang.org/x/sync/errgroup"

	"github.com/cfindexd/cfindexd/gcs"
	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/store"
)

// fetched is one block's worth of work done by a worker: everything of a
// store record except the filter header, which needs the one before it.
type fetched struct {
	rec      store.BlockRecord
	elements int
}

// fetchRange indexes heights start..end (inclusive) of the node's active
// chain on top of the store's tip.
func (f *Follower) fetchRange(ctx context.Context, start, end uint32) error {
	// The window bounds the blocks being fetched or waiting for an earlier
	// height, so memory stays flat however far behind the store is. A token
	// is returned when its block joins the batch in height order.
	window := f.cfg.Workers * 4
	tokens := make(chan struct{}, window)
	jobs := make(chan uint32)
	results := make(chan fetched, window)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(jobs)
		for h := start; ; h++ {
			select {
			case tokens <- struct{}{}:
			case <-gctx.Done():
				return nil
			}
			select {
			case jobs <- h:
			case <-gctx.Done():
				return nil
			}
			if h == end {
				return nil
			}
		}
	})
	workersDone := make(chan struct{})
	var workers errgroup.Group
	for range f.cfg.Workers {
		workers.Go(func() error {
			var b gcs.BasicBuilder
			for h := range jobs {
				r, err := f.fetchOne(gctx, &b, h)
				if err != nil {
					return err
				}
				select {
				case results <- r:
				case <-gctx.Done():
					return nil
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		err := workers.Wait()
		close(workersDone)
		return err
	})
	g.Go(func() error {
		return f.commitInOrder(ctx, gctx, start, end, results, tokens, workersDone)
	})
	err := g.Wait()
	if errors.Is(err, errLinkBroken) {
		f.log.Info().Err(err).Msg("node changed its chain during the round; starting over")
		return nil
	}
	return err
}

// fetchOne fetches and filters the block at height h.
func (f *Follower) fetchOne(ctx context.Context, b *gcs.BasicBuilder, h uint32) (fetched, error) {
	hash, err := f.node.GetBlockHash(ctx, int64(h))
	if err != nil {
		return fetched{}, fmt.Errorf("getblockhash %d: %w", h, err)
	}
	block, prevScripts, err := f.source.FetchBlock(ctx, hash)
	if err != nil {
		return fetched{}, fmt.Errorf("fetch block %s (height %d): %w", hash, h, err)
	}
	if got := block.BlockHash(); got != hash {
		return fetched{}, fmt.Errorf("fetch block %s (height %d): node returned block %s", hash, h, got)
	}
	b.Reset()
	if err := AddBasicElements(b, block, prevScripts); err != nil {
		return fetched{}, fmt.Errorf("block %s (height %d): %w", hash, h, err)
	}
	return fetched{
		rec: store.BlockRecord{
			Height: h,
			Hash:   hash,
			Header: block.Header,
			Filter: b.AppendFilter(nil, hash),
		},
		elements: b.Len(),
	}, nil
}

// commitInOrder receives fetched blocks in any order, restores height order,
// checks links, chains filter headers and commits batches. On shutdown (ctx
// done) it commits the contiguous blocks it holds before returning, so a
// SIGTERM loses no finished work.
func (f *Follower) commitInOrder(ctx, gctx context.Context, start, end uint32, results <-chan fetched, tokens <-chan struct{}, workersDone <-chan struct{}) error {
	tip, have := f.store.Tip()
	prevHash, prevFilterHeader := tip.Hash, tip.FilterHeader
	if !have {
		prevHash, prevFilterHeader = chainhash.Hash{}, chainhash.Hash{}
	}
	live := end-start+1 <= uint32(f.cfg.LiveBlocks)
	pending := make(map[uint32]fetched, cap(tokens))
	batch := make([]store.BlockRecord, 0, min(f.cfg.BatchBlocks, int(end-start+1)))
	next := start
	lastCommit := time.Now()
	prog := newProgress(f.log, f.cfg.ProgressEvery, start, end)
	batchBytes, batchElements := 0, 0

	commit := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := f.store.CommitBatch(batch); err != nil {
			return fmt.Errorf("%w: commit heights %d..%d: %w", errStore, batch[0].Height, batch[len(batch)-1].Height, err)
		}
		last := batch[len(batch)-1]
		newTip := store.Tip{Height: last.Height, Hash: last.Hash, FilterHeader: last.FilterHeader}
		f.obs.Committed(newTip, len(batch), batchBytes)
		if live {
			for _, r := range batch {
				f.log.Info().Uint32("height", r.Height).Str("hash", r.Hash.String()).Int("filter_bytes", len(r.Filter)).Msg("indexed block")
			}
		} else {
			prog.add(len(batch), batchBytes, batchElements, last.Height)
		}
		batch = batch[:0]
		batchBytes, batchElements = 0, 0
		lastCommit = time.Now()
		return nil
	}

	flushTimer := time.NewTicker(f.cfg.CommitEvery)
	defer flushTimer.Stop()
	for next <= end {
		select {
		case r := <-results:
			pending[r.rec.Height] = r
		case <-flushTimer.C:
			if time.Since(lastCommit) >= f.cfg.CommitEvery {
				if err := commit(); err != nil {
					return err
				}
			}
			continue
		case <-gctx.Done():
			// A worker failed or we are shutting down: keep what is done.
			if err := commit(); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
			return gctx.Err()
		case <-workersDone:
			// Workers ended without an error: every result is buffered.
			select {
			case r := <-results:
				pending[r.rec.Height] = r
			default:
				if _, ok := pending[next]; !ok {
					if err := commit(); err != nil {
						return err
					}
					return nil
				}
			}
		}
		for {
			r, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			if (next > 0 || have) && r.rec.Header.PrevBlock != prevHash {
				if err := commit(); err != nil {
					return err
				}
				return fmt.Errorf("%w: block %s at height %d builds on %s, expected %s", errLinkBroken, r.rec.Hash, next, r.rec.Header.PrevBlock, prevHash)
			}
			r.rec.FilterHeader = headers.FilterHeader(r.rec.Filter, prevFilterHeader)
			prevHash, prevFilterHeader = r.rec.Hash, r.rec.FilterHeader
			batch = append(batch, r.rec)
			batchBytes += len(r.rec.Filter)
			batchElements += r.elements
			next++
			<-tokens
			if len(batch) >= f.cfg.BatchBlocks || live {
				if err := commit(); err != nil {
					return err
				}
			}
		}
	}
	return commit()
}
