package blockfiles

import (
	"fmt"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// undoCoin is one spent output as Core's undo data records it (src/undo.h,
// TxInUndoFormatter): the height of the block that created it, whether a
// coinbase did, its value and its script, expanded.
type undoCoin struct {
	Height   uint32
	Coinbase bool
	Value    uint64
	Script   []byte
}

// minUndoCoinSize is the smallest serialized coin: a one-byte height code,
// a one-byte amount and a one-byte script code (an empty raw script).
// Counts read from the data are checked against the bytes left divided by
// this before anything is allocated for them.
const minUndoCoinSize = 3

// undoReader walks a serialized CBlockUndo: CompactSize(number of
// non-coinbase transactions), then per transaction CompactSize(number of
// inputs) and one coin per input, each VARINT(height*2 + coinbase flag),
// a VARINT version dummy when the height is not zero (old versions wrote
// the spending transaction's version there for the last output of a
// transaction, with height 0 for the others), VARINT(CompressAmount(value))
// and a compressed script.
type undoReader struct {
	s wirescan.Reader
	// slab receives expanded special scripts; coins' Script slices point
	// into it or into the data.
	slab []byte
}

// txCount reads the number of transaction entries.
func (r *undoReader) txCount() (int, error) {
	n, err := r.s.Count(1)
	if err != nil {
		return 0, fmt.Errorf("undo transaction count: %w", err)
	}
	return n, nil
}

// inputCount reads the number of coins of the next transaction.
func (r *undoReader) inputCount() (int, error) {
	n, err := r.s.Count(minUndoCoinSize)
	if err != nil {
		return 0, fmt.Errorf("undo input count: %w", err)
	}
	return n, nil
}

// coin reads one coin.
func (r *undoReader) coin() (undoCoin, error) {
	var c undoCoin
	b := r.s.Rest()
	code, n, err := readVarInt(b, 0xffffffff)
	if err != nil {
		return c, fmt.Errorf("coin height: %w", err)
	}
	c.Height, c.Coinbase = uint32(code>>1), code&1 == 1
	used := n
	if c.Height > 0 {
		if _, n, err = readVarInt(b[used:], 0xffffffff); err != nil {
			return c, fmt.Errorf("coin version dummy: %w", err)
		}
		used += n
	}
	amount, n, err := readVarInt(b[used:], ^uint64(0))
	if err != nil {
		return c, fmt.Errorf("coin amount: %w", err)
	}
	used += n
	c.Value = decompressAmount(amount)
	c.Script, n, r.slab, err = readCompressedScript(b[used:], r.slab)
	if err != nil {
		return c, fmt.Errorf("coin script: %w", err)
	}
	return c, r.s.Skip(used + n)
}

// done checks that every byte was read.
func (r *undoReader) done() error {
	if err := r.s.End(); err != nil {
		return fmt.Errorf("undo data: %w", err)
	}
	return nil
}

// prevScriptsFromUndo decodes data, the CBlockUndo of block b, into the
// spent scripts in the indexer's order, checking that it has the block's
// shape: one entry per non-coinbase transaction, each with as many coins as
// the transaction has inputs. Special scripts are expanded into one slab
// per block. Errors wrap ErrMalformed.
func prevScriptsFromUndo(data []byte, b *wirescan.ScannedBlock) ([][]byte, error) {
	r := undoReader{s: wirescan.NewReader(data)}
	ntx, err := r.txCount()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if ntx != len(b.Txids)-1 {
		return nil, fmt.Errorf("%w: undo data has %d transactions, block has %d besides the coinbase", ErrMalformed, ntx, len(b.Txids)-1)
	}
	// Every special script expands to at most 67 bytes; reserve for the
	// common mix (P2PKH/P2SH 21-23 bytes each) and let append grow it.
	r.slab = make([]byte, 0, min(len(data), 25*len(b.Spends)))
	prev := make([][]byte, len(b.Spends))
	slot := 0
	for tx := 1; tx < len(b.Txids); tx++ {
		nin, err := r.inputCount()
		if err != nil {
			return nil, fmt.Errorf("%w: tx %d: %v", ErrMalformed, tx, err)
		}
		if want := b.Inputs(tx); nin != want {
			return nil, fmt.Errorf("%w: undo data has %d coins for tx %d, which has %d inputs", ErrMalformed, nin, tx, want)
		}
		for in := range nin {
			c, err := r.coin()
			if err != nil {
				return nil, fmt.Errorf("%w: tx %d input %d: %v", ErrMalformed, tx, in, err)
			}
			prev[slot] = c.Script
			slot++
		}
	}
	if err := r.done(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return prev, nil
}

// decodeBlockUndo decodes a whole CBlockUndo into coins per transaction
// (index 0 is the block's second transaction), for tests and tools. Every
// count is checked against the bytes left before anything is allocated.
func decodeBlockUndo(data []byte) ([][]undoCoin, error) {
	r := undoReader{s: wirescan.NewReader(data)}
	ntx, err := r.txCount()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	txs := make([][]undoCoin, ntx)
	for i := range txs {
		nin, err := r.inputCount()
		if err != nil {
			return nil, fmt.Errorf("%w: tx %d: %v", ErrMalformed, i+1, err)
		}
		coins := make([]undoCoin, nin)
		for j := range coins {
			if coins[j], err = r.coin(); err != nil {
				return nil, fmt.Errorf("%w: tx %d input %d: %v", ErrMalformed, i+1, j, err)
			}
		}
		txs[i] = coins
	}
	if err := r.done(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return txs, nil
}
