package bitcoind

import (
	"encoding/binary"
	"fmt"

	"github.com/btcsuite/btcd/wire/v2"
)

// minTxOutSize is the smallest serialized CTxOut: 8-byte value and a 1-byte
// empty-script length. Counts read off the wire are checked against the
// bytes left divided by this before anything is allocated.
const minTxOutSize = 9

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
	d := cursor{b: data}
	ntx, err := d.compactSize()
	if err != nil {
		return nil, fmt.Errorf("%w: spenttxouts: transaction count: %v", ErrMalformed, err)
	}
	if ntx > uint64(d.left()) {
		return nil, fmt.Errorf("%w: spenttxouts: %d transactions in %d bytes", ErrMalformed, ntx, d.left())
	}
	txs := make([][]wire.TxOut, ntx)
	for i := range txs {
		nin, err := d.compactSize()
		if err != nil {
			return nil, fmt.Errorf("%w: spenttxouts: tx %d input count: %v", ErrMalformed, i, err)
		}
		if nin > uint64(d.left()/minTxOutSize) {
			return nil, fmt.Errorf("%w: spenttxouts: tx %d claims %d spent outputs in %d bytes", ErrMalformed, i, nin, d.left())
		}
		if nin == 0 {
			continue
		}
		outs := make([]wire.TxOut, nin)
		for j := range outs {
			if d.left() < 8 {
				return nil, fmt.Errorf("%w: spenttxouts: tx %d output %d: truncated value", ErrMalformed, i, j)
			}
			outs[j].Value = int64(binary.LittleEndian.Uint64(d.b[d.off:]))
			d.off += 8
			n, err := d.compactSize()
			if err != nil {
				return nil, fmt.Errorf("%w: spenttxouts: tx %d output %d script length: %v", ErrMalformed, i, j, err)
			}
			if n > uint64(d.left()) {
				return nil, fmt.Errorf("%w: spenttxouts: tx %d output %d: script of %d bytes, %d left", ErrMalformed, i, j, n, d.left())
			}
			outs[j].PkScript = d.b[d.off : d.off+int(n) : d.off+int(n)]
			d.off += int(n)
		}
		txs[i] = outs
	}
	if d.left() != 0 {
		return nil, fmt.Errorf("%w: spenttxouts: %d trailing bytes", ErrMalformed, d.left())
	}
	return txs, nil
}

// cursor reads Bitcoin serialization from a byte slice without copying.
type cursor struct {
	b   []byte
	off int
}

func (c *cursor) left() int { return len(c.b) - c.off }

// compactSize reads a canonical CompactSize integer.
func (c *cursor) compactSize() (uint64, error) {
	if c.left() < 1 {
		return 0, fmt.Errorf("truncated")
	}
	first := c.b[c.off]
	c.off++
	var size int
	var min uint64
	switch first {
	case 0xfd:
		size, min = 2, 0xfd
	case 0xfe:
		size, min = 4, 0x10000
	case 0xff:
		size, min = 8, 0x100000000
	default:
		return uint64(first), nil
	}
	if c.left() < size {
		return 0, fmt.Errorf("truncated")
	}
	var v uint64
	switch size {
	case 2:
		v = uint64(binary.LittleEndian.Uint16(c.b[c.off:]))
	case 4:
		v = uint64(binary.LittleEndian.Uint32(c.b[c.off:]))
	case 8:
		v = binary.LittleEndian.Uint64(c.b[c.off:])
	}
	c.off += size
	if v < min {
		return 0, fmt.Errorf("non-canonical CompactSize %d", v)
	}
	return v, nil
}

// prevScriptsFromSpent checks spent against block's shape (one list per
// transaction, empty for the coinbase, one entry per input) and flattens it
// into the indexer's prevScripts order.
func prevScriptsFromSpent(block *wire.MsgBlock, spent [][]wire.TxOut) ([][]byte, error) {
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
