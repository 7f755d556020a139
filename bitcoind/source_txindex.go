package bitcoind

import (
	"context"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// txIndexSource fetches raw blocks, then the transactions their inputs
// spend with batched getrawtransaction calls (node needs a transaction
// index). It fetches a run of consecutive blocks with one getblock batch
// and the prevouts of the whole run with one getrawtransaction batch (btcd
// closes the connection after every HTTP request, so requests, not bytes,
// are what a catch-up from btcd pays for). Spent outputs created earlier in
// the run are resolved from the run itself, and recently seen transactions
// from an LRU fed by every fetched block (before its run's prevouts are
// resolved) and every fetched transaction.
type txIndexSource struct {
	c     *Client
	cache *scriptCache
	batch int
	// p2p, when set, is where raw blocks come from (SourceOptions.NodeP2P);
	// any failure there falls back to getblock for that run.
	p2p *p2pBlocks
}

var (
	_ BlockSource    = (*txIndexSource)(nil)
	_ RunBlockSource = (*txIndexSource)(nil)
)

// Mode implements BlockSource.
func (s *txIndexSource) Mode() string { return ModeTxIndex }

// FetchBlock implements BlockSource.
func (s *txIndexSource) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	run, err := s.FetchBlocks(ctx, []chainhash.Hash{hash})
	if err != nil {
		return nil, nil, err
	}
	return run[0].Block, run[0].PrevScripts, nil
}

// spendRef is an input whose prevout script comes from the node: where its
// script goes, and what it spends.
type spendRef struct {
	block, slot int
	op          wire.OutPoint
}

// FetchBlocks implements RunBlockSource.
func (s *txIndexSource) FetchBlocks(ctx context.Context, hashes []chainhash.Hash) ([]FetchedBlock, error) {
	if len(hashes) == 0 {
		return nil, nil
	}
	raws, err := s.rawBlocks(ctx, hashes)
	if err != nil {
		return nil, fmt.Errorf("fetch block %s: %w", hashes[0], err)
	}

	// Every transaction of the run, by txid; the cache learns them now so
	// that runs fetched concurrently by other workers find them too.
	ntx := 0
	for _, r := range raws {
		ntx += len(r.txids)
	}
	inRun := make(map[chainhash.Hash]*wire.MsgTx, ntx)
	for _, r := range raws {
		for i, tx := range r.block.Transactions {
			inRun[r.txids[i]] = tx
			s.cache.add(r.txids[i], tx)
		}
	}

	// Resolve what the run and the cache know; list the rest.
	out := make([]FetchedBlock, len(raws))
	var refs []spendRef
	var missing []chainhash.Hash
	wanted := make(map[chainhash.Hash]struct{})
	for bi, r := range raws {
		if len(r.block.Transactions) == 0 {
			return nil, fmt.Errorf("%w: block %s has no transactions", ErrMalformed, hashes[bi])
		}
		nin := 0
		for _, tx := range r.block.Transactions[1:] {
			nin += len(tx.TxIn)
		}
		prev := make([][]byte, nin)
		slot := 0
		for ti, tx := range r.block.Transactions[1:] {
			for ii, in := range tx.TxIn {
				op := in.PreviousOutPoint
				if src := inRun[op.Hash]; src != nil {
					if int(op.Index) >= len(src.TxOut) {
						return nil, fmt.Errorf("%w: block %s tx %d input %d spends %s, which has %d outputs", ErrMalformed, hashes[bi], ti+1, ii, op, len(src.TxOut))
					}
					prev[slot] = src.TxOut[op.Index].PkScript
				} else if script, found, inRange := s.cache.get(op.Hash, op.Index); found {
					if !inRange {
						return nil, fmt.Errorf("%w: block %s tx %d input %d spends %s beyond the transaction's outputs", ErrMalformed, hashes[bi], ti+1, ii, op)
					}
					prev[slot] = script
				} else {
					refs = append(refs, spendRef{block: bi, slot: slot, op: op})
					if _, ok := wanted[op.Hash]; !ok {
						wanted[op.Hash] = struct{}{}
						missing = append(missing, op.Hash)
					}
				}
				slot++
			}
		}
		out[bi] = FetchedBlock{Block: r.block, PrevScripts: prev, Size: r.size}
	}
	if len(missing) == 0 {
		return out, nil
	}

	fetched := make(map[chainhash.Hash]*wire.MsgTx, len(missing))
	for start := 0; start < len(missing); start += s.batch {
		end := min(start+s.batch, len(missing))
		txs, err := s.c.GetRawTransactions(ctx, missing[start:end])
		if err != nil {
			return nil, fmt.Errorf("fetch prevouts of block %s: %w", hashes[0], err)
		}
		for i, tx := range txs {
			fetched[missing[start+i]] = tx
			s.cache.add(missing[start+i], tx)
		}
	}
	for _, ref := range refs {
		src := fetched[ref.op.Hash]
		if int(ref.op.Index) >= len(src.TxOut) {
			return nil, fmt.Errorf("%w: block %s spends %s, which has %d outputs", ErrMalformed, hashes[ref.block], ref.op, len(src.TxOut))
		}
		out[ref.block].PrevScripts[ref.slot] = src.TxOut[ref.op.Index].PkScript
	}
	return out, nil
}
