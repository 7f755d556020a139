package btcdtest

import (
	"context"
	"fmt"

	"github.com/btcsuite/btcd/wire/v2"
)

const (
	// DefaultFeeRate is the fee rate, in sat/vbyte, of transactions the
	// wallet builds: above btcd's default relay minimum of 1 sat/vbyte.
	DefaultFeeRate = 2
	// dustLimit is the smallest change output worth creating; btcd's dust
	// rule needs up to about 700 sat for the largest standard outputs.
	dustLimit = 1000
	// Upper bounds of a signed input's virtual size and a transaction's
	// fixed overhead, for fee estimates.
	maxInputVSize   = 150
	txOverheadVSize = 11
)

// estimateVSize bounds the virtual size of a tx with nIn signed inputs and
// outs (plus one more output of extraOutScript bytes when >= 0).
func estimateVSize(nIn int, outs []*wire.TxOut, extraOutScript int) int64 {
	size := txOverheadVSize + nIn*maxInputVSize
	for _, o := range outs {
		size += 9 + len(o.PkScript)
	}
	if extraOutScript >= 0 {
		size += 9 + extraOutScript
	}
	return int64(size)
}

// Reserve marks the wallet's UTXO op as spent by a transaction being built
// and returns it; false if op is not a spendable wallet output.
func (w *Wallet) Reserve(op wire.OutPoint) (UTXO, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	u, ok := w.utxos[op]
	if !ok || !w.spendableLocked(u) {
		return UTXO{}, false
	}
	w.pending[op] = true
	return *u, true
}

// BuildTx builds and signs a version-2 transaction spending ins and paying
// outs, with the remainder minus a fee of feeRate sat/vbyte going to
// changeScript (no change output if it would be dust or changeScript is
// nil). The inputs are reserved; call Release if the tx is not submitted.
func (w *Wallet) BuildTx(ins []UTXO, outs []*wire.TxOut, changeScript []byte, feeRate int64) (*wire.MsgTx, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	tx, _, err := w.buildTxLocked(ins, outs, changeScript, feeRate)
	return tx, err
}

// buildTxLocked is BuildTx with w.mu held; it also returns the fee paid.
func (w *Wallet) buildTxLocked(ins []UTXO, outs []*wire.TxOut, changeScript []byte,
	feeRate int64) (*wire.MsgTx, int64, error) {

	tx := wire.NewMsgTx(2)
	prevOuts := make([]*wire.TxOut, len(ins))
	var inSum, outSum int64
	for i := range ins {
		tx.AddTxIn(wire.NewTxIn(&ins[i].OutPoint, nil, nil))
		prevOuts[i] = ins[i].TxOut()
		inSum += ins[i].Value
	}
	for _, o := range outs {
		tx.AddTxOut(o)
		outSum += o.Value
	}
	changeLen := -1
	if changeScript != nil {
		changeLen = len(changeScript)
	}
	fee := feeRate * estimateVSize(len(ins), outs, changeLen)
	change := inSum - outSum - fee
	if change < 0 {
		return nil, 0, fmt.Errorf("build tx: inputs %d sat < outputs %d + fee %d: %w", inSum, outSum, fee, ErrInsufficientFunds)
	}
	if changeScript != nil && change >= dustLimit {
		tx.AddTxOut(wire.NewTxOut(change, changeScript))
		outSum += change
	}
	if err := w.signTxLocked(tx, prevOuts); err != nil {
		return nil, 0, err
	}
	for i := range ins {
		w.pending[ins[i].OutPoint] = true
	}
	return tx, inSum - outSum, nil
}

// Fund builds and signs a transaction paying outs from the wallet's oldest
// spendable outputs, with change to a fresh P2WPKH script. The inputs are
// reserved; call Release if the tx is not submitted.
func (w *Wallet) Fund(outs []*wire.TxOut, feeRate int64) (*wire.MsgTx, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var need int64
	for _, o := range outs {
		need += o.Value
	}
	var ins []UTXO
	var have int64
	for k := range numKinds {
		for _, op := range w.queues[k] {
			u, ok := w.utxos[op]
			if !ok || !w.spendableLocked(u) {
				continue
			}
			ins = append(ins, *u)
			have += u.Value
			if have >= need+feeRate*estimateVSize(len(ins), outs, 22) {
				break
			}
		}
		if have >= need+feeRate*estimateVSize(len(ins), outs, 22) {
			break
		}
	}
	change, err := w.newScriptLocked(KindP2WPKH)
	if err != nil {
		return nil, err
	}
	tx, _, err := w.buildTxLocked(ins, outs, change, feeRate)
	return tx, err
}

// Send funds, signs and submits a transaction paying outs (sendrawtransaction)
// and returns it. Its inputs stay reserved until a block spends them; on
// failure they are released.
func (w *Wallet) Send(ctx context.Context, n *Node, outs []*wire.TxOut) (*wire.MsgTx, error) {
	tx, err := w.Fund(outs, DefaultFeeRate)
	if err != nil {
		return nil, err
	}
	if _, err := n.SendRawTransaction(ctx, tx); err != nil {
		w.Release(tx)
		return nil, err
	}
	return tx, nil
}
