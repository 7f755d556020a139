package prevouts

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/nodep2p"
)

// txIndexSource fetches raw blocks, then the transactions their inputs
// spend with batched getrawtransaction calls (node needs a transaction
// index). It fetches a run of consecutive blocks with one getdata over the
// node's P2P port (or one getblock batch) and the prevouts of the whole run
// with one getrawtransaction batch (btcd closes the connection after every
// HTTP request, so requests, not bytes, are what a catch-up from btcd pays
// for). Blocks are read in place (wirescan.ScanBlock). Spent outputs are resolved
// from a cache of output scripts that learns every fetched block, in chain
// order when the caller passes RunOrder turns, and every fetched
// transaction; only what it lacks reaches the node.
type txIndexSource struct {
	c   *nodeclient.Client
	log zerolog.Logger
	// cache is shared by every run; nil when disabled, and each run then
	// uses a cache of its own blocks only.
	cache *scriptCache
	batch int
	// p2p, when set, is where raw blocks come from (SourceOptions.NodeP2P);
	// any failure there falls back to getblock for that run.
	p2p *nodep2p.Pool
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
	block, err := nodeclient.DecodeBlock(run[0].Raw, hash)
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
func (s *txIndexSource) FetchBlocks(ctx context.Context, hashes []chainhash.Hash, turn *RunTurn) (_ []FetchedBlock, err error) {
	// A prefix keeps the turn (the rest of the run teaches the cache
	// next); the whole run, or a failure, ends it.
	whole := false
	defer func() {
		if whole || err != nil {
			turn.Done()
		}
	}()
	if len(hashes) == 0 {
		whole = true
		return nil, nil
	}
	blocks, err := s.rawBlocksCapped(ctx, hashes)
	if err != nil {
		return nil, fmt.Errorf("fetch block %s: %w", hashes[0], err)
	}
	whole = len(blocks) == len(hashes)
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
	if whole {
		turn.Done()
	}

	// Resolve what the cache knows; list the rest.
	out := make([]FetchedBlock, len(blocks))
	var refs []spendRef
	spends := 0
	for bi, b := range blocks {
		prev := make([][]byte, len(b.Spends))
		refs, err = cache.resolve(b.Spends, prev, bi, refs)
		if err != nil {
			return nil, fmt.Errorf("%w: block %s: %w", nodeclient.ErrMalformed, hashes[bi], err)
		}
		spends += len(b.Spends)
		out[bi] = FetchedBlock{Header: b.Header, Hash: b.Hash, OutputScripts: b.Outs, PrevScripts: prev, Raw: b.Raw}
	}
	s.fromCache.Add(uint64(spends - len(refs)))
	if len(refs) == 0 {
		return out, nil
	}

	// Ask the node for each missing transaction once, in txid order, and
	// read each answer straight into the cache (a copy of its output
	// scripts only), from which the spends are then resolved: nothing
	// else of the transactions is kept.
	slices.SortFunc(refs, func(a, b spendRef) int { return bytes.Compare(a.op.Hash[:], b.op.Hash[:]) })
	var missing []chainhash.Hash
	for i, ref := range refs {
		if i == 0 || ref.op.Hash != refs[i-1].op.Hash {
			missing = append(missing, ref.op.Hash)
		}
	}
	entries := make([][]byte, len(missing))
	for start := 0; start < len(missing); start += s.batch {
		end := min(start+s.batch, len(missing))
		err := s.c.GetRawTxs(ctx, missing[start:end], false, func(i int, _ []byte, t wirescan.ScannedTx) error {
			entries[start+i] = cache.store(missing[start+i], t.Outs)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("fetch prevouts of block %s: %w", hashes[0], err)
		}
	}
	s.fromNode.Add(uint64(len(refs)))
	j := 0
	for _, ref := range refs {
		for missing[j] != ref.op.Hash {
			j++
		}
		script, ok := entryScript(entries[j], ref.op.Index)
		if !ok {
			return nil, fmt.Errorf("%w: block %s spends %s beyond the transaction's outputs", nodeclient.ErrMalformed, hashes[ref.block], ref.op)
		}
		out[ref.block].PrevScripts[ref.slot] = script
	}
	return out, nil
}
