package gcs

import (
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/wire/v2"
)

// ErrPrevScriptCount means the spent-script list handed to AddBasicElements
// does not hold exactly one script per non-coinbase input of the block: the
// block source and the block disagree, and the filter cannot be built.
// (It lives here rather than in errors.go because elements.go is the only
// file that returns it.)
var ErrPrevScriptCount = errors.New("spent script count does not match block inputs")

// opReturn is OP_RETURN. BIP-158 excludes outputs whose script starts with
// it, whatever follows, so only the first byte matters.
const opReturn = 0x6a

// AddBasicElements feeds BIP-158 basic-filter elements of block into b: every
// output script except empty and OP_RETURN-prefixed ones, and every spent
// prevout script except empty ones. The first transaction of a block is its
// coinbase; its input spends nothing and contributes no element.
//
// prevScripts holds the spent output script of each non-coinbase input, in
// block order (tx order, then input order). If its length differs from the
// number of non-coinbase inputs, AddBasicElements returns an error wrapping
// ErrPrevScriptCount and adds nothing.
//
// It does not Reset b: callers reset between blocks. De-duplication is the
// builder's job. It allocates nothing beyond what b does.
func AddBasicElements(b *BasicBuilder, block *wire.MsgBlock, prevScripts [][]byte) error {
	txs := block.Transactions
	if len(txs) > 0 {
		txs = txs[1:] // skip the coinbase's input
	}
	inputs := 0
	for _, tx := range txs {
		inputs += len(tx.TxIn)
	}
	if inputs != len(prevScripts) {
		return fmt.Errorf("block %s: %d spent scripts for %d non-coinbase inputs: %w",
			block.BlockHash(), len(prevScripts), inputs, ErrPrevScriptCount)
	}

	for _, tx := range block.Transactions {
		for _, out := range tx.TxOut {
			if len(out.PkScript) == 0 || out.PkScript[0] == opReturn {
				continue
			}
			b.Add(out.PkScript)
		}
	}
	for _, script := range prevScripts {
		if len(script) == 0 {
			continue
		}
		b.Add(script)
	}
	return nil
}

// AddBasicScripts feeds b the BIP-158 basic-filter elements of a block read
// in place (prevouts.FetchedBlock): every output script except empty and
// OP_RETURN-prefixed ones, and every non-empty spent script. The caller
// vouches that prevScripts has one script per non-coinbase input, as a
// RunBlockSource does. It does not Reset b.
func AddBasicScripts(b *BasicBuilder, outputScripts, prevScripts [][]byte) {
	for _, s := range outputScripts {
		if basicOutput(s) {
			b.Add(s)
		}
	}
	for _, s := range prevScripts {
		if len(s) > 0 {
			b.Add(s)
		}
	}
}

// CountBasicScripts returns how many elements AddBasicScripts would add
// (before the builder de-duplicates them), without adding them: what
// cfindexd's progress lines count as filter elements, for callers that
// only count (cmd/cfbench's profiled run, so its profile is the
// daemon's work alone).
func CountBasicScripts(outputScripts, prevScripts [][]byte) int {
	n := 0
	for _, s := range outputScripts {
		if basicOutput(s) {
			n++
		}
	}
	for _, s := range prevScripts {
		if len(s) > 0 {
			n++
		}
	}
	return n
}

// basicOutput reports whether an output script is a basic-filter element:
// not empty and not OP_RETURN-prefixed.
func basicOutput(script []byte) bool {
	return len(script) > 0 && script[0] != opReturn
}
