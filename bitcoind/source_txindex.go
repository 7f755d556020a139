package bitcoind

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// txIndexSource fetches raw blocks, then the transactions their inputs
// spend with batched getrawtransaction calls (node needs a transaction
// index). It fetches a run of consecutive blocks with one getdata over the
// node's P2P port (or one getblock batch) and the prevouts of the whole run
// with one getrawtransaction batch (btcd closes the connection after every
// HTTP request, so requests, not bytes, are what a catch-up from btcd pays
// for). Blocks are read in place (scanBlock). Spent outputs are resolved
// from a cache of output scripts that learns every fetched block, in chain
// order when the caller passes RunOrder turns, and every fetched
// transaction; only what it lacks reaches the node.
type txIndexSource struct {
	c *Client
	// cache is shared by every run; nil when disabled, and each run then
	// uses a cache of its own blocks only.
	cache *scriptCache
	batch int
	// p2p, when set, is where raw blocks come from (SourceOptions.NodeP2P);
	// any failure there falls back to getblock for that run.
	p2p *p2pBlocks
	// fromCache and fromNode count spent scripts resolved by the cache
	// and by getrawtransaction (PrevoutCounts).
	fromCache, fromNode atomic.Uint64
	// blockSize is the largest recent block size (observeSize), which
	// sizes the requests of a run; runCap bounds what one run holds
	// (runCapBytes; tests lower it).
	blockSize atomic.Int64
	runCap    int
}

// PrevoutCounts returns how many spent scripts the source has resolved
// from its cache of output scripts and how many by asking the node
// (getrawtransaction), for operators sizing SourceOptions.ScriptCacheBytes.
func (s *txIndexSource) PrevoutCounts() (fromCache, fromNode uint64) {
	return s.fromCache.Load(), s.fromNode.Load()
}

var (
	_ BlockSource    = (*txIndexSource)(nil)
	_ RunBlockSource = (*txIndexSource)(nil)
	_ PrevoutCounter = (*txIndexSource)(nil)
)

// Mode implements BlockSource.
func (s *txIndexSource) Mode() string { return ModeTxIndex }

// FetchBlock implements BlockSource.
func (s *txIndexSource) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	run, err := s.FetchBlocks(ctx, []chainhash.Hash{hash}, nil)
	if err != nil {
		return nil, nil, err
	}
	block, err := decodeBlock(run[0].Raw, hash)
	if err != nil {
		return nil, nil, err
	}
	return block, run[0].PrevScripts, nil
}

// spendRef is an input whose prevout script comes from the node: where its
// script goes, and what it spends.
type spendRef struct {
	block, slot int
	op          wire.OutPoint
}

// FetchBlocks implements RunBlockSource.
func (s *txIndexSource) FetchBlocks(ctx context.Context, hashes []chainhash.Hash, turn *RunTurn) ([]FetchedBlock, error) {
	defer turn.Done()
	if len(hashes) == 0 {
		return nil, nil
	}
	blocks, err := s.rawBlocksCapped(ctx, hashes)
	if err != nil {
		return nil, fmt.Errorf("fetch block %s: %w", hashes[0], err)
	}
	hashes = hashes[:len(blocks)]

	// The cache learns the run once the runs before it have taught it
	// theirs, then the next run may go on.
	cache := s.cache
	if cache == nil {
		cache = newScriptCache(0)
	}
	if err := turn.Wait(ctx); err != nil {
		return nil, err
	}
	for _, b := range blocks {
		cache.addBlock(b)
	}
	turn.Done()

	// Resolve what the cache knows; list the rest.
	out := make([]FetchedBlock, len(blocks))
	var refs []spendRef
	spends := 0
	for bi, b := range blocks {
		prev := make([][]byte, len(b.spends))
		refs, err = cache.resolve(b.spends, prev, bi, refs)
		if err != nil {
			return nil, fmt.Errorf("%w: block %s: %w", ErrMalformed, hashes[bi], err)
		}
		spends += len(b.spends)
		out[bi] = FetchedBlock{Header: b.header, Hash: b.hash, OutputScripts: b.outs, PrevScripts: prev, Raw: b.raw}
	}
	s.fromCache.Add(uint64(spends - len(refs)))
	if len(refs) == 0 {
		return out, nil
	}

	// Ask the node for each missing transaction once.
	wanted := make(map[chainhash.Hash]struct{}, len(refs))
	var missing []chainhash.Hash
	for _, ref := range refs {
		if _, ok := wanted[ref.op.Hash]; !ok {
			wanted[ref.op.Hash] = struct{}{}
			missing = append(missing, ref.op.Hash)
		}
	}

	fetched := make(map[chainhash.Hash][][]byte, len(missing))
	for start := 0; start < len(missing); start += s.batch {
		end := min(start+s.batch, len(missing))
		txs, err := s.c.getTxOutputs(ctx, missing[start:end])
		if err != nil {
			return nil, fmt.Errorf("fetch prevouts of block %s: %w", hashes[0], err)
		}
		for i, tx := range txs {
			fetched[missing[start+i]] = tx.outs
			cache.add(missing[start+i], tx.outs)
		}
	}
	s.fromNode.Add(uint64(len(refs)))
	for _, ref := range refs {
		outs := fetched[ref.op.Hash]
		if int(ref.op.Index) >= len(outs) {
			return nil, fmt.Errorf("%w: block %s spends %s, which has %d outputs", ErrMalformed, hashes[ref.block], ref.op, len(outs))
		}
		out[ref.block].PrevScripts[ref.slot] = outs[ref.op.Index]
	}
	return out, nil
}
