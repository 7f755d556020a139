package bitcoind

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// rawBlock is a block decoded from getblock <hash> 0 with the txids of its
// transactions (computed from the serialized bytes, without re-encoding
// each transaction as MsgTx.TxHash does) and its serialized size.
type rawBlock struct {
	block *wire.MsgBlock
	txids []chainhash.Hash
	size  int
}

// GetRawBlocks fetches the serialized blocks with the given hashes (getblock
// <hash> 0) in one JSON-RPC batch and decodes each straight into a
// wire.MsgBlock. Each block's hash is checked. The first failing element's
// error is returned.
func (c *Client) GetRawBlocks(ctx context.Context, hashes []chainhash.Hash) ([]*wire.MsgBlock, error) {
	raws, err := c.getRawBlocks(ctx, hashes)
	if err != nil {
		return nil, err
	}
	blocks := make([]*wire.MsgBlock, len(raws))
	for i, r := range raws {
		blocks[i] = r.block
	}
	return blocks, nil
}

// getRawBlocks fetches blocks by hash: one plain call for one block, one
// batch for several.
func (c *Client) getRawBlocks(ctx context.Context, hashes []chainhash.Hash) ([]rawBlock, error) {
	out := make([]rawBlock, len(hashes))
	errs := make([]error, len(hashes))
	var scratch []byte
	use := func(i int, raw []byte) error {
		r, err := decodeRawBlock(raw, hashes[i], &scratch)
		if err != nil {
			return err
		}
		out[i] = r
		return nil
	}
	fail := func(i int, err error) { errs[i] = err }
	var err error
	if len(hashes) == 1 {
		err = c.callHex(ctx, "getblock", []any{hashes[0].String(), 0}, func(raw []byte) error { return use(0, raw) })
	} else {
		params := make([][]any, len(hashes))
		for i, h := range hashes {
			params[i] = []any{h.String(), 0}
		}
		err = c.callHexBatch(ctx, "getblock", params, use, fail)
	}
	if err != nil {
		if len(hashes) == 1 {
			return nil, fmt.Errorf("getblock %s: %w", hashes[0], err)
		}
		return nil, fmt.Errorf("getblock %s and %d more: %w", hashes[0], len(hashes)-1, err)
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("getblock %s: %w", hashes[i], err)
		}
	}
	return out, nil
}

// decodeRawBlock deserializes raw, checks that it is the block asked for and
// computes its txids. scratch is reused between calls.
func decodeRawBlock(raw []byte, want chainhash.Hash, scratch *[]byte) (rawBlock, error) {
	blk := new(wire.MsgBlock)
	locs, err := blk.DeserializeTxLoc(bytes.NewBuffer(raw))
	if err != nil {
		return rawBlock{}, fmt.Errorf("%w: block %s: %v", ErrMalformed, want, err)
	}
	if got := blk.BlockHash(); got != want {
		return rawBlock{}, fmt.Errorf("%w: asked for block %s, got %s", ErrMalformed, want, got)
	}
	txids := make([]chainhash.Hash, len(blk.Transactions))
	for i, tx := range blk.Transactions {
		txids[i] = txidOf(tx, raw[locs[i].TxStart:locs[i].TxStart+locs[i].TxLen], scratch)
	}
	return rawBlock{block: blk, txids: txids, size: len(raw)}, nil
}

// txidOf hashes the serialization of tx without witness data. ser is the
// transaction's serialization as sent. Without witness data that is the
// txid preimage itself; with it, the preimage is the version, the inputs
// and outputs after the marker and flag bytes, and the lock time.
func txidOf(tx *wire.MsgTx, ser []byte, scratch *[]byte) chainhash.Hash {
	// The marker and flag bytes, not tx.HasWitness, tell the layout: a
	// (non-canonical) witness serialization with only empty witnesses
	// still carries them.
	if len(ser) < 6 || ser[4] != 0x00 || ser[5] != 0x01 {
		return chainhash.DoubleHashH(ser)
	}
	stripped := tx.SerializeSizeStripped()
	if stripped < 8 || len(ser) < stripped+2 {
		return tx.TxHash()
	}
	b := append((*scratch)[:0], ser[:4]...)
	b = append(b, ser[6:6+stripped-8]...)
	b = append(b, ser[len(ser)-4:]...)
	*scratch = b
	return chainhash.DoubleHashH(b)
}

// callHex invokes method, whose result is a hex string, and hands its
// decoded bytes to use (valid only during the call).
func (c *Client) callHex(ctx context.Context, method string, params []any, use func(raw []byte) error) error {
	body, err := json.Marshal(request{JSONRPC: jsonRPCVersion, ID: c.nextID.Add(1), Method: method, Params: params})
	if err != nil {
		return fmt.Errorf("%s: encode request: %w", method, err)
	}
	return c.postHex(ctx, method, body, method, 0, 1, false,
		func(_ int, raw []byte) error { return use(raw) }, nil)
}

// callHexBatch sends one batch of method calls with the given params, whose
// results are hex strings. use gets each element's decoded bytes; fail gets
// each element's error. The returned error is for the exchange as a whole.
func (c *Client) callHexBatch(ctx context.Context, method string, params [][]any, use func(i int, raw []byte) error, fail func(i int, err error)) error {
	n := len(params)
	first := c.nextID.Add(uint64(n)) - uint64(n) + 1
	reqs := make([]request, n)
	for i, p := range params {
		reqs[i] = request{JSONRPC: jsonRPCVersion, ID: first + uint64(i), Method: method, Params: p}
	}
	body, err := json.Marshal(reqs)
	if err != nil {
		return fmt.Errorf("batch of %d %s: encode request: %w", n, method, err)
	}
	return c.postHex(ctx, fmt.Sprintf("batch of %d %s", n, method), body, method, first, n, true, use, fail)
}
