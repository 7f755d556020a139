package indexer

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/cfindexd/cfindexd/gcs"
	"github.com/cfindexd/cfindexd/prevouts"
	"github.com/cfindexd/cfindexd/store"
)

// runSource is implemented by block sources that fetch a run of
// consecutive blocks with fewer round trips (prevouts' txindex and
// blocks-directory sources: one request per run instead of one or two per
// block, each a new TCP connection with btcd). The follower plans runs in
// chain order and gives each a turn from a prevouts.RunOrder, so that the
// source's script cache learns blocks in that order.
type runSource interface {
	FetchBlocks(ctx context.Context, hashes []chainhash.Hash, turn *prevouts.RunTurn) ([]prevouts.FetchedBlock, error)
}

// Run sizing: a run aims at runBytes of serialized blocks and holds at
// most maxRunBlocks. Small blocks (test chains, early mainnet) go sixteen
// to a request; full mainnet blocks one or two, so the decoded blocks a
// worker holds stay a few megabytes.
const (
	maxRunBlocks = 16
	runBytes     = 2 << 20
)

// runSizer keeps a moving average of fetched block sizes and turns it into
// a run length. Safe for concurrent use.
type runSizer struct {
	avg atomic.Int64 // bytes; 0 until the first block is seen
}

// observe adds one block's serialized size to the average. A block larger
// than the average takes its place at once: runs must shrink as soon as
// blocks grow (eight workers fetching runs of sixteen 1 MB blocks hold
// 128 MB), while they may grow back slowly.
func (s *runSizer) observe(size int) {
	for {
		old := s.avg.Load()
		next := int64(size)
		if old != 0 && next < old {
			next = old - old/8 + int64(size)/8
		}
		if next < 1 {
			next = 1
		}
		if s.avg.CompareAndSwap(old, next) {
			return
		}
	}
}

// next returns the length of the next run, at most maxRun; 1 until a block
// size is known.
func (s *runSizer) next(maxRun int) int {
	avg := s.avg.Load()
	if maxRun <= 1 || avg == 0 {
		return 1
	}
	return int(max(1, min(int64(maxRun), runBytes/avg)))
}

// fetchRun fetches and filters the blocks of job, appending them to dst.
func (f *Follower) fetchRun(ctx context.Context, b *blockBuilders, runner runSource, sizer *runSizer, job fetchJob, dst []fetched) ([]fetched, error) {
	if runner == nil || len(job.hashes) == 0 {
		for i := range job.n {
			one := fetchJob{height: job.height + i}
			if len(job.hashes) > 0 {
				one.hash, one.hashKnown = job.hashes[i], true
			}
			r, err := f.fetchOne(ctx, b, one)
			if err != nil {
				return dst, err
			}
			dst = append(dst, r)
		}
		return dst, nil
	}
	err := fetchRunBlocks(ctx, runner, sizer, job.height, job.hashes, job.turn, func(h uint32, fb prevouts.FetchedBlock) error {
		b.filter.Reset()
		gcs.AddBasicScripts(&b.filter, fb.OutputScripts, fb.PrevScripts)
		r := f.record(&b.filter, h, fb.Hash, fb.Header)
		var err error
		if r.sp, err = b.buildSP(h, fb.Raw, fb.PrevScripts); err != nil {
			return err
		}
		dst = append(dst, r)
		return nil
	})
	return dst, err
}

// fetchRunBlocks fetches the run of hashes (heights from on) from runner
// with turn, which it ends, and calls each with every block in height
// order once the source has checked it and it is the block asked for.
// The source may return the first blocks of the run only (it bounds what
// one run holds); the rest is fetched after them, with the same turn,
// which the source ends with the run's last block (and this, if the run
// is given up).
func fetchRunBlocks(ctx context.Context, runner runSource, sizer *runSizer, from uint32, hashes []chainhash.Hash, turn *prevouts.RunTurn, each func(h uint32, fb prevouts.FetchedBlock) error) error {
	defer turn.Done()
	last := from + uint32(len(hashes)) - 1
	for done := 0; done < len(hashes); {
		first := from + uint32(done)
		blocks, err := runner.FetchBlocks(ctx, hashes[done:], turn)
		if err != nil {
			return fmt.Errorf("fetch blocks %d..%d: %w", first, last, err)
		}
		if len(blocks) == 0 || len(blocks) > len(hashes)-done {
			return fmt.Errorf("fetch blocks %d..%d: source returned %d blocks for %d hashes", first, last, len(blocks), len(hashes)-done)
		}
		for i, fb := range blocks {
			sizer.observe(len(fb.Raw))
			h := first + uint32(i)
			if fb.Hash != hashes[done+i] {
				return fmt.Errorf("fetch block %s (height %d): source returned block %s", hashes[done+i], h, fb.Hash)
			}
			if err := each(h, fb); err != nil {
				return err
			}
		}
		done += len(blocks)
	}
	return nil
}

// fetchJob is a run of n consecutive heights from height for a worker,
// with their block hashes when the producer already resolved them (hashes
// is then of length n) and the run's turn when the source takes runs.
// fetchOne takes a single height: hash and hashKnown are for it.
type fetchJob struct {
	height    uint32
	n         uint32
	hashes    []chainhash.Hash
	turn      *prevouts.RunTurn
	hash      chainhash.Hash
	hashKnown bool
}

// hashBatch is how many block hashes the producer resolves in one JSON-RPC
// batch when the node client can send batches.
const hashBatch = 250

// hashLister is implemented by *nodeclient.Client. btcd closes its RPC
// connection after every HTTP request, so a getblockhash per block would
// cost a TCP connect and close each; the hashes are resolved in batches
// instead. Nodes without batches (test fakes) get one GetBlockHash per
// block from the workers.
type hashLister interface {
	// GetBlockHashes returns the active chain's hashes of heights
	// first..first+n-1 in one request.
	GetBlockHashes(ctx context.Context, first, n uint32) ([]chainhash.Hash, error)
}

// blockHashes resolves the active-chain hashes of heights first..first+n-1
// with one getblockhash batch.
func blockHashes(ctx context.Context, node hashLister, first, n uint32) ([]chainhash.Hash, error) {
	hashes, err := node.GetBlockHashes(ctx, first, n)
	if err != nil {
		return nil, err
	}
	if len(hashes) != int(n) {
		return nil, fmt.Errorf("getblockhash %d..%d: %d hashes", first, first+n-1, len(hashes))
	}
	return hashes, nil
}

// fetchOne fetches and filters the block of job.
func (f *Follower) fetchOne(ctx context.Context, b *blockBuilders, job fetchJob) (fetched, error) {
	h, hash := job.height, job.hash
	if !job.hashKnown {
		var err error
		if hash, err = f.node.GetBlockHash(ctx, int64(h)); err != nil {
			return fetched{}, fmt.Errorf("node's block at height %d: %w", h, err)
		}
	}
	block, prevScripts, err := f.source.FetchBlock(ctx, hash)
	if err != nil {
		return fetched{}, fmt.Errorf("fetch block %s (height %d): %w", hash, h, err)
	}
	return f.filterBlock(b, h, hash, block, prevScripts)
}

// filterBlock builds the filter of block, fetched as the block at height h
// with the given hash.
func (f *Follower) filterBlock(b *blockBuilders, h uint32, hash chainhash.Hash, block *wire.MsgBlock, prevScripts [][]byte) (fetched, error) {
	if got := block.BlockHash(); got != hash {
		return fetched{}, fmt.Errorf("fetch block %s (height %d): node returned block %s", hash, h, got)
	}
	b.filter.Reset()
	if err := gcs.AddBasicElements(&b.filter, block, prevScripts); err != nil {
		return fetched{}, fmt.Errorf("block %s (height %d): %w", hash, h, err)
	}
	r := f.record(&b.filter, h, hash, block.Header)
	var err error
	r.sp, err = b.buildSPMsg(h, block, prevScripts)
	return r, err
}

// record builds the filter of the elements in b for the block at height h
// with the given hash and header.
func (f *Follower) record(b *gcs.BasicBuilder, h uint32, hash chainhash.Hash, header wire.BlockHeader) fetched {
	return fetched{
		rec: store.BlockRecord{
			Height: h,
			Hash:   hash,
			Header: header,
			Filter: b.AppendFilter(nil, hash),
		},
		elements: b.Len(),
	}
}
