package indexer

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"golang.org/x/sync/errgroup"

	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/prevouts"
	"github.com/cfindexd/cfindexd/silentpay"
	"github.com/cfindexd/cfindexd/store"
)

// fetched is one block's worth of work done by a worker: everything of a
// store record except the filter header, which needs the one before it.
type fetched struct {
	rec      store.BlockRecord
	elements int
	// sp is the block's silent-payment data when the round builds it.
	sp *silentpay.Block
}

// pendingReorg is a switch to another branch that the round has found but
// not yet written: the blocks above Fork leave the active chain in the same
// store transaction that connects the first blocks of the new branch.
type pendingReorg struct {
	// Fork is the highest height the store and the node agree on.
	Fork uint32
	// ForkHash and ForkFilterHeader describe the block at Fork.
	ForkHash, ForkFilterHeader chainhash.Hash
	// OldTip is the store's tip before the switch, and OldWork the work of
	// its blocks above Fork.
	OldTip  store.Tip
	OldWork *big.Int
	// NodeTip and NodeHeight are the node's tip when the round began.
	NodeTip    chainhash.Hash
	NodeHeight int64
	// Settled: the node has stayed on a chain with no more work than ours
	// for Config.ReorgSettle, so the switch is written even if the new
	// branch has less work than OldWork.
	Settled bool

	// committed is set once the switch is written.
	committed bool
}

// fetchRange indexes heights start..end (inclusive) of the node's active
// chain on top of the store's tip, or on top of reorg.Fork when reorg is
// set.
func (f *Follower) fetchRange(ctx context.Context, start, end uint32, reorg *pendingReorg) error {
	batcher, _ := f.node.(hashLister)
	runner, _ := f.source.(runSource)
	maxRun := 1
	if batcher != nil && runner != nil {
		maxRun = maxRunBlocks
	} else {
		runner = nil
	}
	sizer := &runSizer{}
	plan, err := f.planSP(start, reorg)
	if err != nil {
		return err
	}
	var order *prevouts.RunOrder
	if runner != nil {
		order = prevouts.NewRunOrder()
	}

	// The window bounds the blocks being fetched or waiting for an earlier
	// height, so memory stays flat however far behind the store is. A token
	// is returned when its block joins the batch in height order; a run
	// takes one token per block. Blocks waiting for an earlier height are
	// only their filters, so the window grows with the run length: each
	// worker can hold a few runs' worth.
	//
	// While the round builds silent-payment data, a block waiting also
	// holds its tweaks (several times its filter), and the tweak work
	// keeps each run in hand for long: the runs held at once are bounded
	// by Config.SPRunsInHand (inHand), and the window by twice what they
	// can hold.
	spOn, spFrom := plan.on, plan.from
	window := f.cfg.Workers * 4 * maxRun
	var inHand chan struct{}
	if spOn {
		window = f.cfg.SPRunsInHand * 2 * maxRun
		inHand = make(chan struct{}, f.cfg.SPRunsInHand)
	}
	tokens := make(chan struct{}, window)
	jobs := make(chan fetchJob)
	results := make(chan fetched, window)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(f.recovering("job planner", func() error {
		defer close(jobs)
		var ahead []chainhash.Hash // hashes resolved for the heights after the last job's
		for h := start; ; {
			left := uint64(end) - uint64(h) + 1
			n := uint32(min(uint64(sizer.next(maxRun)), left))
			for range n {
				select {
				case tokens <- struct{}{}:
				case <-gctx.Done():
					return nil
				}
			}
			job := fetchJob{height: h, n: n}
			if order != nil {
				job.turn = order.Next()
			}
			if batcher != nil {
				job.hashes = make([]chainhash.Hash, 0, n)
				for uint32(len(job.hashes)) < n {
					if len(ahead) == 0 {
						next := h + uint32(len(job.hashes))
						var err error
						if ahead, err = blockHashes(gctx, batcher, next, min(hashBatch, end-next+1)); err != nil {
							return err
						}
					}
					take := min(int(n)-len(job.hashes), len(ahead))
					job.hashes = append(job.hashes, ahead[:take]...)
					ahead = ahead[take:]
				}
			}
			select {
			case jobs <- job:
			case <-gctx.Done():
				return nil
			}
			if uint64(n) == left {
				return nil
			}
			h += n
		}
	}))
	// The workers run in g, so the first of them to fail (or panic) cancels
	// gctx at once: the planner then stops handing out jobs and closes
	// jobs, the other workers stop, and the committer keeps what is done.
	// Until that change a worker's error reached gctx only once every
	// worker had returned, and a worker failing at the lowest height the
	// committer waits for, with the window full behind it, left the planner
	// waiting for a token only that height returns and the other workers
	// waiting for a job: the round, and Run, hung for good.
	workersDone := make(chan struct{})
	var workers sync.WaitGroup
	// The workers build silent-payment data from the plan's first height
	// (spFrom, taken above); the committer moves plan on as it attaches.
	for range f.cfg.Workers {
		workers.Add(1)
		work := f.recovering("fetch worker", func() error {
			b := blockBuilders{spOn: spOn, spFrom: spFrom}
			var run []fetched
			for {
				// A slot before a job: jobs, and with them the source's
				// turns, go out in chain order to workers that can run
				// them. A worker waiting for a slot with a job in hand
				// could hold the turn that the runs in hand wait for.
				if inHand != nil {
					select {
					case inHand <- struct{}{}:
					case <-gctx.Done():
						return nil
					}
				}
				job, ok := <-jobs
				if !ok {
					if inHand != nil {
						<-inHand // for the workers still waiting to learn
					}
					return nil
				}
				var err error
				if run, err = f.fetchRun(gctx, &b, runner, sizer, job, run[:0]); err != nil {
					return err
				}
				for _, r := range run {
					select {
					case results <- r:
					case <-gctx.Done():
						return nil
					}
				}
				clear(run) // the results are the committer's now
				if inHand != nil {
					<-inHand
				}
			}
		})
		g.Go(func() error {
			defer workers.Done()
			return work()
		})
	}
	g.Go(func() error {
		workers.Wait()
		close(workersDone)
		return nil
	})
	g.Go(f.recovering("committer", func() error {
		return f.commitInOrder(ctx, gctx, start, end, reorg, &plan, results, tokens, workersDone)
	}))
	err = g.Wait()
	if errors.Is(err, errLinkBroken) {
		f.log.Info().Err(err).Msg("node changed its chain during the round; starting over")
		return nil
	}
	return err
}

// commitInOrder receives fetched blocks in any order, restores height order,
// checks links, chains filter headers and commits batches. On shutdown (ctx
// done), or when another goroutine of the round fails (gctx done), it
// commits the contiguous blocks it holds or finds buffered before
// returning, so a SIGTERM or a failed fetch loses no finished work.
//
// With a pending reorg, the first commit also disconnects the old branch
// (store.Reorg), and it waits until the new branch has more work than the
// old one: light clients drop a peer that shows them a tip with less work
// than one they already know, so the store never shows the fork point or
// a new branch with less work in between. If the round's range ends first,
// nothing is written and it returns errLowerWork, unless the reorg has
// Settled (the node stayed on its chain for the settle time). Until that
// commit nothing is written, and a shutdown or a broken link drops the
// fetched blocks; the next round finds the fork again.
func (f *Follower) commitInOrder(ctx, gctx context.Context, start, end uint32, reorg *pendingReorg, plan *spPlan, results <-chan fetched, tokens <-chan struct{}, workersDone <-chan struct{}) error {
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
	var prog *progress // catch-up lines; a live round logs each block instead
	if !live {
		prog = newProgress(f.log, f.cfg.ProgressEvery, start, end, f.source)
	}
	batchBytes, batchElements, batchSPBytes := 0, 0, 0
	newWork := new(big.Int) // of the new branch above the fork, while a reorg is pending

	// reorgReady tells whether a pending reorg may be written now.
	reorgReady := func() bool {
		if reorg == nil || len(batch) == 0 {
			return true
		}
		if newWork.Cmp(reorg.OldWork) > 0 {
			return true
		}
		return reorg.Settled && (batch[len(batch)-1].Height == end || len(batch) >= maxReorgBatches*f.cfg.BatchBlocks)
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
			ev := reorgLog(f.log, depth).Uint32("fork_height", reorg.Fork).Int("depth", depth).Str("old_tip", reorg.OldTip.Hash.String()).
				Str("new_tip", batch[len(batch)-1].Hash.String())
			if newWork.Cmp(reorg.OldWork) > 0 {
				ev.Msg("reorg: switched to the node's branch")
			} else {
				ev.Stringer("settle", f.cfg.ReorgSettle).Msg("reorg: switched to the node's branch, which has less work but stayed the node's for the settle time (light clients that saw the old tip may drop this server)")
			}
			reorg.committed = true
			reorg = nil
		} else if err := f.store.CommitBatch(batch); err != nil {
			return fmt.Errorf("%w: commit heights %d..%d: %w", errStore, batch[0].Height, batch[len(batch)-1].Height, err)
		}
		last := batch[len(batch)-1]
		newTip := store.Tip{Height: last.Height, Hash: last.Hash, FilterHeader: last.FilterHeader}
		f.obs.Committed(newTip, len(batch), batchBytes)
		f.log.Debug().Uint32("height", last.Height).Int("blocks", len(batch)).Msg("committed")
		if live {
			for _, r := range batch {
				f.log.Info().Uint32("height", r.Height).Str("hash", r.Hash.String()).Int("filter_bytes", len(r.Filter)).Msg("indexed block")
			}
		} else {
			prog.add(len(batch), batchBytes, batchElements, last.Height)
		}
		batch = batch[:0]
		batchBytes, batchElements, batchSPBytes = 0, 0, 0
		lastCommit = time.Now()
		return nil
	}

	stopping := false // gctx is done: commit what is contiguous and return
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
			// A goroutine failed or we are shutting down: keep what is
			// done, the results already buffered included (a failed
			// worker cancels gctx at once, while the others' results may
			// still wait in the channel).
			stopping = true
		drain:
			for {
				select {
				case r := <-results:
					pending[r.rec.Height] = r
				default:
					break drain
				}
			}
		case <-workersDone:
			// Every worker has returned, so every result is buffered. (One
			// that failed has cancelled gctx, or is about to; its error ends
			// the round whichever way this returns.)
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
			plan.attach(&r)
			prevHash, prevFilterHeader = r.rec.Hash, r.rec.FilterHeader
			if reorg != nil {
				addWork(newWork, &r.rec.Header)
				if len(batch) >= maxReorgBatches*f.cfg.BatchBlocks && !reorgReady() {
					// As much of the new branch as memory allows, and still
					// less work: wait for the settle time.
					return errLowerWork
				}
			}
			batch = append(batch, r.rec)
			batchBytes += len(r.rec.Filter)
			batchElements += r.elements
			if sp := r.rec.SilentPay; sp != nil {
				batchSPBytes += len(sp.TweakData) + len(sp.Filter)
			}
			next++
			<-tokens
			if len(batch) >= f.cfg.BatchBlocks || batchSPBytes >= maxBatchSPBytes || live {
				if err := commit(); err != nil {
					return err
				}
			}
		}
		if stopping {
			if err := commit(); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
			return gctx.Err()
		}
	}
	if err := commit(); err != nil {
		return err
	}
	if reorg != nil {
		return errLowerWork
	}
	return nil
}

// maxBatchSPBytes ends a batch early once its silent-payment data
// (tweak data and taproot filters) reaches it. A full block's tweak data
// is several times its filter, and a commit holds it three times over:
// the batch, the store's encoded values and bbolt's dirty pages. 2 MiB is
// about 45 full blocks, several seconds of tweak work a commit, so the
// extra commits cost little (docs/performance.md has the measurements).
const maxBatchSPBytes = 2 << 20

// maxReorgBatches bounds, in units of Config.BatchBlocks, how many blocks of
// a new branch are held in memory before the reorg is written. A new branch
// that has not gained more work than the old one by then is treated like
// one with less work: written only once the node has stayed on it for the
// settle time, and then in parts (so light clients see a tip with less
// work for a moment rather than the process holding an unbounded batch).
const maxReorgBatches = 10
