package bitcoind

import (
	"context"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// txIndexSource fetches the raw block, then the transactions its inputs
// spend with batched getrawtransaction calls (node needs a transaction
// index). Spent outputs created earlier in the same block are resolved from
// the block itself, and recently seen transactions from an LRU fed by every
// fetched block and every fetched transaction.
type txIndexSource struct {
	c     *Client
	cache *scriptCache
	batch int
}

var _ BlockSource = (*txIndexSource)(nil)

// Mode implements BlockSource.
func (s *txIndexSource) Mode() string { return ModeTxIndex }

// FetchBlock implements BlockSource.
func (s *txIndexSource) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	blk, err := s.c.GetRawBlock(ctx, hash)
	if err != nil {
		return nil, nil, fmt.Errorf("fetch block %s: %w", hash, err)
	}
	inBlock := make(map[chainhash.Hash]*wire.MsgTx, len(blk.Transactions))
	for _, tx := range blk.Transactions {
		inBlock[tx.TxHash()] = tx
	}

	// Which transactions must come from the node?
	var missing []chainhash.Hash
	wanted := make(map[chainhash.Hash]struct{})
	nin := 0
	for _, tx := range blk.Transactions[1:] {
		for _, in := range tx.TxIn {
			nin++
			id := in.PreviousOutPoint.Hash
			if _, ok := inBlock[id]; ok {
				continue
			}
			if _, ok := wanted[id]; ok {
				continue
			}
			if s.cache.has(id) {
				continue
			}
			wanted[id] = struct{}{}
			missing = append(missing, id)
		}
	}
	fetched := make(map[chainhash.Hash]*wire.MsgTx, len(missing))
	for start := 0; start < len(missing); start += s.batch {
		end := min(start+s.batch, len(missing))
		txs, err := s.c.GetRawTransactions(ctx, missing[start:end])
		if err != nil {
			return nil, nil, fmt.Errorf("fetch prevouts of block %s: %w", hash, err)
		}
		for i, tx := range txs {
			fetched[missing[start+i]] = tx
			s.cache.add(missing[start+i], tx)
		}
	}

	prev := make([][]byte, 0, nin)
	for ti, tx := range blk.Transactions[1:] {
		for ii, in := range tx.TxIn {
			op := in.PreviousOutPoint
			src := inBlock[op.Hash]
			if src == nil {
				src = fetched[op.Hash]
			}
			if src != nil {
				if int(op.Index) >= len(src.TxOut) {
					return nil, nil, fmt.Errorf("%w: block %s tx %d input %d spends %s, which has %d outputs", ErrMalformed, hash, ti+1, ii, op, len(src.TxOut))
				}
				prev = append(prev, src.TxOut[op.Index].PkScript)
				continue
			}
			script, found, inRange := s.cache.get(op.Hash, op.Index)
			if !found {
				// Evicted between the check and now (cache smaller
				// than one block's needs): fetch it alone.
				txs, err := s.c.GetRawTransactions(ctx, []chainhash.Hash{op.Hash})
				if err != nil {
					return nil, nil, fmt.Errorf("fetch prevouts of block %s: %w", hash, err)
				}
				fetched[op.Hash] = txs[0]
				if int(op.Index) >= len(txs[0].TxOut) {
					return nil, nil, fmt.Errorf("%w: block %s spends %s, which has %d outputs", ErrMalformed, hash, op, len(txs[0].TxOut))
				}
				prev = append(prev, txs[0].TxOut[op.Index].PkScript)
				continue
			}
			if !inRange {
				return nil, nil, fmt.Errorf("%w: block %s tx %d input %d spends %s beyond the transaction's outputs", ErrMalformed, hash, ti+1, ii, op)
			}
			prev = append(prev, script)
		}
	}
	for id, tx := range inBlock {
		s.cache.add(id, tx)
	}
	return blk, prev, nil
}
