package nodeclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// MempoolSnapshot is the node's mempool as getrawmempool lists it.
type MempoolSnapshot struct {
	Txids []chainhash.Hash
	// Sequence is Core's mempool sequence at the snapshot (getrawmempool
	// false true): ZMQ "sequence" A/R events numbered below it are already
	// reflected. Valid only when HasSequence.
	Sequence    uint64
	HasSequence bool
}

// GetRawMempool lists the txids in the node's mempool. withSequence asks
// Core for its mempool sequence too (getrawmempool false true, Core ≥ 21);
// btcd does not take that argument, so ask for it only from Core.
func (c *Client) GetRawMempool(ctx context.Context, withSequence bool) (MempoolSnapshot, error) {
	var strs []string
	var snap MempoolSnapshot
	if withSequence {
		var reply struct {
			Txids    []string `json:"txids"`
			Sequence *uint64  `json:"mempool_sequence"`
		}
		if err := c.Call(ctx, "getrawmempool", []any{false, true}, &reply); err != nil {
			return MempoolSnapshot{}, err
		}
		if reply.Sequence == nil {
			return MempoolSnapshot{}, fmt.Errorf("%w: getrawmempool: no mempool_sequence", ErrMalformed)
		}
		strs, snap.Sequence, snap.HasSequence = reply.Txids, *reply.Sequence, true
	} else if err := c.Call(ctx, "getrawmempool", []any{false}, &strs); err != nil {
		return MempoolSnapshot{}, err
	}
	snap.Txids = make([]chainhash.Hash, len(strs))
	for i, s := range strs {
		h, err := parseHash("getrawmempool", s)
		if err != nil {
			return MempoolSnapshot{}, err
		}
		snap.Txids[i] = h
	}
	return snap, nil
}

// GetMempoolTransactions fetches the serializations of txids (with
// witness) in one getrawtransaction batch. A transaction the node no longer
// has (it left the mempool since it was listed) comes back nil rather than
// failing the batch; each returned one is checked to hash to its txid.
// Mempool transactions need no -txindex.
func (c *Client) GetMempoolTransactions(ctx context.Context, txids []chainhash.Hash) ([][]byte, error) {
	out := make([][]byte, len(txids))
	if len(txids) == 0 {
		return out, nil
	}
	params := make([][]any, len(txids))
	for i, id := range txids {
		params[i] = []any{id.String(), 0}
	}
	var firstErr error
	use := func(i int, raw []byte) error {
		t, err := wirescan.ScanTx(raw)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		if t.TxID != txids[i] {
			return fmt.Errorf("%w: getrawtransaction %s returned tx %s", ErrMalformed, txids[i], t.TxID)
		}
		out[i] = bytes.Clone(raw)
		return nil
	}
	fail := func(i int, err error) {
		if errors.Is(err, ErrTxNotFound) {
			return
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("getrawtransaction %s: %w", txids[i], err)
		}
	}
	if err := c.callHexBatch(ctx, "getrawtransaction", params, use, fail); err != nil {
		return nil, err
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}
