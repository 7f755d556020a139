package indexer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"golang.org/x/sync/errgroup"

	"github.com/cfindexd/cfindexd/bitcoind"
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

// pendingReorg is a switch to another branch that the round has found but
// not yet written: the blocks above Fork leave the active chain in the same
// store transaction that connects the first blocks of the new branch.
type pendingReorg struct {
	// Fork is the highest height the store and the node agree on.
	Fork uint32
	// ForkHash and ForkFilterHeader describe the block at Fork.
	ForkHash, ForkFilterHeader chainhash.Hash
	// OldTip is the store's tip before the switch.
	OldTip store.Tip
}

// fetchRange indexes heights start..end (inclusive) of the node's active
// chain on top of the store's tip, or on top of reorg.Fork when reorg is
// set.
func (f *Follower) fetchRange(ctx context.Context, start, end uint32, reorg *pendingReorg) error {
	// The window bounds the blocks being fetched or waiting for an earlier
	// height, so memory stays flat however far behind the store is. A token
	// is returned when its block joins the batch in height order.
	window := f.cfg.Workers * 4
	tokens := make(chan struct{}, window)
	jobs := make(chan fetchJob)
	results := make(chan fetched, window)
	batcher, _ := f.node.(rpcBatcher)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(jobs)
		var ahead []chainhash.Hash // hashes resolved for heights h, h+1, ...
		for h := start; ; h++ {
			select {
			case tokens <- struct{}{}:
			case <-gctx.Done():
				return nil
			}
			job := fetchJob{height: h}
			if batcher != nil {
				if len(ahead) == 0 {
					var err error
					if ahead, err = blockHashes(gctx, batcher, h, min(hashBatch, end-h+1)); err != nil {
						return err
					}
				}
				job.hash, job.hashKnown = ahead[0], true
				ahead = ahead[1:]
			}
			select {
			case jobs <- job:
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
			for job := range jobs {
				r, err := f.fetchOne(gctx, &b, job)
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
		return f.commitInOrder(ctx, gctx, start, end, reorg, results, tokens, workersDone)
	})
	err := g.Wait()
	if errors.Is(err, errLinkBroken) {
		f.log.Info().Err(err).Msg("node changed its chain during the round; starting over")
		return nil
	}
	return err
}

// fetchJob is one height for a worker, with its block hash when the
// producer already resolved it.
type fetchJob struct {
	height    uint32
	hash      chainhash.Hash
	hashKnown bool
}

// hashBatch is how many block hashes the producer resolves in one JSON-RPC
// batch when the node client can send batches.
const hashBatch = 250

// rpcBatcher is implemented by *bitcoind.Client. btcd closes its RPC
// connection after every HTTP request, so a getblockhash per block cost a
// TCP connect and close each; cfbench's CPU profile of a catch-up from btcd
// had connection setup and teardown at about a third of cfindexd's CPU,
// and resolving the hashes in batches cut the catch-up's wall time by
// 20-40 % and its CPU by a quarter. Nodes without batches (test fakes) get
// one GetBlockHash per block from the workers.
type rpcBatcher interface {
	CallBatch(ctx context.Context, calls []bitcoind.BatchCall) error
}

// blockHashes resolves the active-chain hashes of heights first..first+n-1
// with one getblockhash batch.
func blockHashes(ctx context.Context, node rpcBatcher, first, n uint32) ([]chainhash.Hash, error) {
	strs := make([]string, n)
	calls := make([]bitcoind.BatchCall, n)
	for i := range calls {
		calls[i] = bitcoind.BatchCall{Method: "getblockhash", Params: []any{int64(first) + int64(i)}, Result: &strs[i]}
	}
	if err := node.CallBatch(ctx, calls); err != nil {
		return nil, fmt.Errorf("getblockhash %d..%d: %w", first, first+n-1, err)
	}
	hashes := make([]chainhash.Hash, n)
	for i := range calls {
		if calls[i].Err != nil {
			return nil, fmt.Errorf("getblockhash %d: %w", first+uint32(i), calls[i].Err)
		}
		h, err := chainhash.NewHashFromStr(strs[i])
		if err != nil {
			return nil, fmt.Errorf("getblockhash %d: %q: %w", first+uint32(i), strs[i], err)
		}
		hashes[i] = *h
	}
	return hashes, nil
}

// fetchOne fetches and filters the block of job.
func (f *Follower) fetchOne(ctx context.Context, b *gcs.BasicBuilder, job fetchJob) (fetched, error) {
	h, hash := job.height, job.hash
	if !job.hashKnown {
		var err error
		if hash, err = f.node.GetBlockHash(ctx, int64(h)); err != nil {
			return fetched{}, fmt.Errorf("getblockhash %d: %w", h, err)
		}
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
//
// With a pending reorg, the first commit also disconnects the old branch
// (store.Reorg), and it waits until the new branch is longer than the old
// one (or the round's range ends): light clients drop a peer that shows
// them a tip with less work than one they already know, so the store never
// shows the fork point or a shorter new branch in between. Until that
// commit nothing is written, and a shutdown or a broken link drops the
// fetched blocks; the next round finds the fork again.
func (f *Follower) commitInOrder(ctx, gctx context.Context, start, end uint32, reorg *pendingReorg, results <-chan fetched, tokens <-chan struct{}, workersDone <-chan struct{}) error {
	tip, have := f.store.Tip()
	prevHash, prevFilterHeader := tip.Hash, tip.FilterHeader
	if !have {
		prevHash, prevFilterHeader = chainhash.Hash{}, chainhash.Hash{}
	}
	if reorg != nil {
		prevHash, prevFilterHeader = reorg.ForkHash, reorg.ForkFilterHeader
	}
	live := end-start+1 <= uint32(f.cfg.LiveBlocks)
	pending := make(map[uint32]fetched, cap(tokens))
	batch := make([]store.BlockRecord, 0, min(f.cfg.BatchBlocks, int(end-start+1)))
	next := start
	lastCommit := time.Now()
	prog := newProgress(f.log, f.cfg.ProgressEvery, start, end)
	batchBytes, batchElements := 0, 0

	// reorgReady tells whether a pending reorg may be written now.
	reorgReady := func() bool {
		if reorg == nil || len(batch) == 0 {
			return true
		}
		last := batch[len(batch)-1].Height
		return last > reorg.OldTip.Height || last == end || len(batch) >= maxReorgBatches*f.cfg.BatchBlocks
	}
	commit := func() error {
		if len(batch) == 0 || !reorgReady() {
			return nil
		}
		if reorg != nil {
			if _, err := f.store.Reorg(reorg.Fork, batch); err != nil {
				return fmt.Errorf("%w: reorg to %d and commit heights %d..%d: %w", errStore, reorg.Fork, batch[0].Height, batch[len(batch)-1].Height, err)
			}
			depth := int(reorg.OldTip.Height - reorg.Fork)
			f.obs.Reorg(depth)
			f.log.Info().Uint32("fork_height", reorg.Fork).Int("depth", depth).Str("old_tip", reorg.OldTip.Hash.String()).
				Str("new_tip", batch[len(batch)-1].Hash.String()).Msg("reorg: switched to the node's branch")
			reorg = nil
		} else if err := f.store.CommitBatch(batch); err != nil {
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
	if reorg != nil && len(batch) == 0 {
		return nil
	}
	return commit()
}

// maxReorgBatches bounds, in units of Config.BatchBlocks, how many blocks of
// a new branch are held back before the reorg is written anyway (a reorg
// deeper than that shows light clients a shorter tip for a moment rather
// than holding an unbounded batch in memory).
const maxReorgBatches = 10
