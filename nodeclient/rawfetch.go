package nodeclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// GetRawBlocks fetches the serialized blocks with the given hashes (getblock
// <hash> 0) in one JSON-RPC batch and decodes each straight into a
// wire.MsgBlock. Each block's hash is checked. The first failing element's
// error is returned.
func (c *Client) GetRawBlocks(ctx context.Context, hashes []chainhash.Hash) ([]*wire.MsgBlock, error) {
	blocks := make([]*wire.MsgBlock, len(hashes))
	_, err := c.getBlocksHex(ctx, hashes, 0, func(i int, raw []byte) error {
		b, err := DecodeBlock(raw, hashes[i])
		blocks[i] = b
		return err
	})
	if err != nil {
		return nil, err
	}
	return blocks, nil
}

// GetScannedBlocks fetches blocks by hash like GetRawBlocks and reads each
// in place (wirescan.ScanBlock), hash and merkle root checked. With maxBytes > 0 it
// may return only the first blocks (at least one): those whose hex fits in
// the first 2×maxBytes bytes of the batch reply, the rest of which is not
// read.
func (c *Client) GetScannedBlocks(ctx context.Context, hashes []chainhash.Hash, maxBytes int) ([]*wirescan.ScannedBlock, error) {
	blocks := make([]*wirescan.ScannedBlock, len(hashes))
	got, err := c.getBlocksHex(ctx, hashes, 2*maxBytes, func(i int, raw []byte) error {
		b, err := wirescan.ScanBlock(bytes.Clone(raw), hashes[i])
		if err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		blocks[i] = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return blocks[:got], nil
}

// getBlocksHex fetches blocks by hash (getblock <hash> 0): one plain call
// for one block, one batch for several. use gets each block's bytes, valid
// only during the call. With maxReply > 0 a batch reply is read only that
// far when its first elements are complete there; it returns how many
// blocks were delivered (all of them, unless the reply was cut).
func (c *Client) getBlocksHex(ctx context.Context, hashes []chainhash.Hash, maxReply int, use func(i int, raw []byte) error) (int, error) {
	errs := make([]error, len(hashes))
	fail := func(i int, err error) { errs[i] = err }
	var err error
	got := len(hashes)
	if len(hashes) == 1 {
		err = c.callHex(ctx, "getblock", []any{hashes[0].String(), 0}, func(raw []byte) error { return use(0, raw) })
	} else {
		params := make([][]any, len(hashes))
		for i, h := range hashes {
			params[i] = []any{h.String(), 0}
		}
		err = c.callHexBatchPrefix(ctx, "getblock", params, maxReply, &got, use, fail)
	}
	// The errors name the call (getblock, batch of n getblock) already;
	// the block is what they lack.
	if err != nil {
		if len(hashes) == 1 {
			return 0, fmt.Errorf("block %s: %w", hashes[0], err)
		}
		return 0, fmt.Errorf("blocks %s and %d more: %w", hashes[0], len(hashes)-1, err)
	}
	for i, err := range errs[:got] {
		if err != nil {
			return 0, fmt.Errorf("block %s: %w", hashes[i], err)
		}
	}
	return got, nil
}

// callHex invokes method, whose result is a hex string, and hands its
// decoded bytes to use (valid only during the call).
func (c *Client) callHex(ctx context.Context, method string, params []any, use func(raw []byte) error) error {
	body, err := json.Marshal(request{JSONRPC: jsonRPCVersion, ID: c.nextID.Add(1), Method: method, Params: params})
	if err != nil {
		return fmt.Errorf("%s: encode request: %w", method, err)
	}
	return c.postHex(ctx, method, body, method, 0, 1, false, 0, nil,
		func(_ int, raw []byte) error { return use(raw) }, nil)
}

// callHexBatch sends one batch of method calls with the given params, whose
// results are hex strings. use gets each element's decoded bytes; fail gets
// each element's error. The returned error is for the exchange as a whole.
func (c *Client) callHexBatch(ctx context.Context, method string, params [][]any, use func(i int, raw []byte) error, fail func(i int, err error)) error {
	return c.callHexBatchPrefix(ctx, method, params, 0, nil, use, fail)
}

// callHexBatchPrefix is callHexBatch reading at most maxReply bytes of the
// reply (0: all of it) when its first elements are complete and in order
// there; *got is then set to how many were, and the rest of the batch gets
// neither use nor fail.
func (c *Client) callHexBatchPrefix(ctx context.Context, method string, params [][]any, maxReply int, got *int, use func(i int, raw []byte) error, fail func(i int, err error)) error {
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
	return c.postHex(ctx, fmt.Sprintf("batch of %d %s", n, method), body, method, first, n, true, maxReply, got, use, fail)
}
