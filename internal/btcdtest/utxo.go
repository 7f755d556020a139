package btcdtest

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// UTXO is a confirmed output the wallet owns.
type UTXO struct {
	OutPoint wire.OutPoint
	Value    int64
	PkScript []byte
	Kind     Kind
	Height   int32 // height of the block that created it
	Coinbase bool
}

// TxOut is the output as a wire.TxOut.
func (u *UTXO) TxOut() *wire.TxOut { return wire.NewTxOut(u.Value, u.PkScript) }

// walletQueues keeps, per kind, the outpoints in the order they were
// confirmed, so coin selection is deterministic without sorting maps.
// Entries that were spent are dropped lazily.
type walletQueues [numKinds][]wire.OutPoint

// syncBatch is how many blocks Sync fetches per JSON-RPC batch.
const syncBatch = 100

// Sync scans every active-chain block the wallet has not seen, up to the
// node's tip, fetching blocks in batches. If the chain the wallet scanned
// was reorganised away, the wallet forgets everything (including
// reservations) and rescans from genesis.
func (w *Wallet) Sync(ctx context.Context, n *Node) error {
	_, tip, err := n.BestBlock(ctx)
	if err != nil {
		return fmt.Errorf("wallet sync: %w", err)
	}
	w.mu.Lock()
	scanned := int32(len(w.synced)) - 1
	var last chainhash.Hash
	if scanned >= 0 {
		last = w.synced[scanned]
	}
	w.mu.Unlock()
	if scanned >= 0 {
		if scanned > tip {
			w.reset()
		} else if h, err := n.BlockHash(ctx, scanned); err != nil {
			return fmt.Errorf("wallet sync: %w", err)
		} else if h != last {
			w.reset()
		}
	}
	for from := w.Height() + 1; from <= tip; from += syncBatch {
		to := min(from+syncBatch-1, tip)
		blocks, err := fetchBlocks(ctx, n, from, to)
		if err != nil {
			return fmt.Errorf("wallet sync: %w", err)
		}
		for i, blk := range blocks {
			if err := w.ConnectBlock(blk, from+int32(i)); err != nil {
				return fmt.Errorf("wallet sync: %w", err)
			}
		}
	}
	return nil
}

// fetchBlocks returns the active-chain blocks at heights from..to, with one
// batch of getblockhash and one of getblock.
func fetchBlocks(ctx context.Context, n *Node, from, to int32) ([]*wire.MsgBlock, error) {
	count := int(to - from + 1)
	hashes := make([]string, count)
	calls := make([]batchCall, count)
	for i := range calls {
		calls[i] = batchCall{method: "getblockhash", params: []any{from + int32(i)}, result: &hashes[i]}
	}
	if err := n.batch(ctx, calls); err != nil {
		return nil, err
	}
	for i := range calls {
		if calls[i].err != nil {
			return nil, calls[i].err
		}
	}
	raw := make([]string, count)
	for i := range calls {
		calls[i] = batchCall{method: "getblock", params: []any{hashes[i], 0}, result: &raw[i]}
	}
	if err := n.batch(ctx, calls); err != nil {
		return nil, err
	}
	blocks := make([]*wire.MsgBlock, count)
	for i := range calls {
		if calls[i].err != nil {
			return nil, calls[i].err
		}
		b, err := hex.DecodeString(raw[i])
		if err != nil {
			return nil, fmt.Errorf("getblock %s: hex: %w", hashes[i], err)
		}
		var blk wire.MsgBlock
		if err := blk.Deserialize(bytes.NewReader(b)); err != nil {
			return nil, fmt.Errorf("getblock %s: decode: %w", hashes[i], err)
		}
		blocks[i] = &blk
	}
	return blocks, nil
}

// reset forgets all chain state (after a reorg below the scanned tip).
func (w *Wallet) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.utxos = make(map[wire.OutPoint]*UTXO)
	w.pending = make(map[wire.OutPoint]bool)
	w.queues = walletQueues{}
	w.synced = nil
}

// ConnectBlock records blk at height: outputs it pays to the wallet become
// UTXOs, outputs it spends are removed. Blocks must be connected in chain
// order starting at genesis (height 0); Sync does that.
func (w *Wallet) ConnectBlock(blk *wire.MsgBlock, height int32) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if want := int32(len(w.synced)); height != want {
		return fmt.Errorf("wallet: connect block at height %d, want %d", height, want)
	}
	if height > 0 && blk.Header.PrevBlock != w.synced[height-1] {
		return fmt.Errorf("wallet: block %s at height %d does not extend %s",
			blk.BlockHash(), height, w.synced[height-1])
	}
	for i, tx := range blk.Transactions {
		coinbase := i == 0
		if !coinbase {
			for _, in := range tx.TxIn {
				delete(w.utxos, in.PreviousOutPoint)
				delete(w.pending, in.PreviousOutPoint)
			}
		}
		var txid chainhash.Hash
		for idx, out := range tx.TxOut {
			o, ok := w.owned[string(out.PkScript)]
			if !ok {
				continue
			}
			if txid == (chainhash.Hash{}) {
				txid = tx.TxHash()
			}
			op := wire.OutPoint{Hash: txid, Index: uint32(idx)}
			w.utxos[op] = &UTXO{OutPoint: op, Value: out.Value, PkScript: out.PkScript,
				Kind: o.kind, Height: height, Coinbase: coinbase}
			w.queues[o.kind] = append(w.queues[o.kind], op)
		}
	}
	w.synced = append(w.synced, blk.BlockHash())
	return nil
}

// Height is the height of the last block the wallet scanned, -1 before any.
func (w *Wallet) Height() int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return int32(len(w.synced)) - 1
}

// spendableLocked reports whether u may be spent in the block after the
// wallet's scanned tip (coinbase maturity) and is not reserved.
func (w *Wallet) spendableLocked(u *UTXO) bool {
	return w.spendableAtLocked(u, int32(len(w.synced)))
}

// spendableAtLocked reports whether u may be spent in a block at height
// and is not reserved.
func (w *Wallet) spendableAtLocked(u *UTXO, height int32) bool {
	if w.pending[u.OutPoint] {
		return false
	}
	return !u.Coinbase || height-u.Height >= int32(w.params.CoinbaseMaturity)
}

// Unspent lists the spendable UTXOs (mature, not reserved) in the order
// they were confirmed, optionally only of the given kinds.
func (w *Wallet) Unspent(kinds ...Kind) []UTXO {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(kinds) == 0 {
		for k := range numKinds {
			kinds = append(kinds, k)
		}
	}
	var out []UTXO
	for _, k := range kinds {
		if k < 0 || k >= numKinds {
			continue
		}
		for _, op := range w.queues[k] {
			if u, ok := w.utxos[op]; ok && w.spendableLocked(u) {
				out = append(out, *u)
			}
		}
	}
	return out
}

// Balance is the sum of all confirmed unspent outputs, mature or not.
func (w *Wallet) Balance() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var sum int64
	for _, u := range w.utxos {
		sum += u.Value
	}
	return sum
}

// takeLocked reserves the oldest UTXO of kind worth at least minValue that
// a block at height may spend.
func (w *Wallet) takeLocked(kind Kind, minValue int64, height int32) (UTXO, bool) {
	u := w.findLocked(kind, minValue, height)
	if u == nil {
		return UTXO{}, false
	}
	w.pending[u.OutPoint] = true
	return *u, true
}

// findLocked returns the oldest UTXO of kind worth at least minValue that
// a block at height may spend, or nil.
func (w *Wallet) findLocked(kind Kind, minValue int64, height int32) *UTXO {
	q := w.queues[kind]
	// Drop spent entries from the front so queues stay short.
	for len(q) > 0 {
		if _, ok := w.utxos[q[0]]; ok {
			break
		}
		q = q[1:]
	}
	w.queues[kind] = q
	for _, op := range q {
		u, ok := w.utxos[op]
		if !ok || u.Value < minValue || !w.spendableAtLocked(u, height) {
			continue
		}
		return u
	}
	return nil
}

// Release un-reserves the inputs of a transaction the wallet built but that
// was not submitted (or was rejected).
func (w *Wallet) Release(tx *wire.MsgTx) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, in := range tx.TxIn {
		delete(w.pending, in.PreviousOutPoint)
	}
}
