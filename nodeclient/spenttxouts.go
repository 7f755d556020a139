package nodeclient

import (
	"encoding/binary"
	"fmt"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// DecodeSpentTxOuts decodes the body of Bitcoin Core's
// GET /rest/spenttxouts/<hash>.bin (Core >= 30). The layout (src/rest.cpp,
// SerializeBlockUndo) is: CompactSize(number of transactions, coinbase
// included), then for every transaction CompactSize(number of inputs) and
// that many plain CTxOut (int64 LE value, CompactSize script length,
// script). The coinbase's list is always empty. This is not the compressed
// undo-file format and carries no height or coinbase flag.
//
// The returned PkScript slices alias data.
func DecodeSpentTxOuts(data []byte) ([][]wire.TxOut, error) {
	d := wirescan.NewReader(data)
	ntx, err := d.Count(1)
	if err != nil {
		return nil, fmt.Errorf("%w: spenttxouts: transaction count: %v", ErrMalformed, err)
	}
	txs := make([][]wire.TxOut, ntx)
	for i := range txs {
		// Counts are checked against the bytes left at the smallest
		// CTxOut before anything is allocated.
		nin, err := d.Count(wirescan.MinTxOutSize)
		if err != nil {
			return nil, fmt.Errorf("%w: spenttxouts: tx %d spent output count: %v", ErrMalformed, i, err)
		}
		if nin == 0 {
			continue
		}
		outs := make([]wire.TxOut, nin)
		for j := range outs {
			value, err := d.Next(8)
			if err != nil {
				return nil, fmt.Errorf("%w: spenttxouts: tx %d output %d value: %v", ErrMalformed, i, j, err)
			}
			outs[j].Value = int64(binary.LittleEndian.Uint64(value))
			if outs[j].PkScript, err = d.Bytes(); err != nil {
				return nil, fmt.Errorf("%w: spenttxouts: tx %d output %d script: %v", ErrMalformed, i, j, err)
			}
		}
		txs[i] = outs
	}
	if err := d.End(); err != nil {
		return nil, fmt.Errorf("%w: spenttxouts: %v", ErrMalformed, err)
	}
	return txs, nil
}

// PrevScriptsFromSpent checks spent against block's shape (one list per
// transaction, empty for the coinbase, one entry per input) and flattens it
// into the indexer's prevScripts order.
func PrevScriptsFromSpent(block *wire.MsgBlock, spent [][]wire.TxOut) ([][]byte, error) {
	if len(spent) != len(block.Transactions) {
		return nil, fmt.Errorf("%w: spenttxouts has %d transactions, block has %d", ErrMalformed, len(spent), len(block.Transactions))
	}
	if len(spent) > 0 && len(spent[0]) != 0 {
		return nil, fmt.Errorf("%w: spenttxouts lists %d spent outputs for the coinbase", ErrMalformed, len(spent[0]))
	}
	n := 0
	for i := 1; i < len(spent); i++ {
		if len(spent[i]) != len(block.Transactions[i].TxIn) {
			return nil, fmt.Errorf("%w: spenttxouts tx %d has %d spent outputs, transaction has %d inputs", ErrMalformed, i, len(spent[i]), len(block.Transactions[i].TxIn))
		}
		n += len(spent[i])
	}
	scripts := make([][]byte, 0, n)
	for i := 1; i < len(spent); i++ {
		for j := range spent[i] {
			scripts = append(scripts, spent[i][j].PkScript)
		}
	}
	return scripts, nil
}
