package btcdtest

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Call sends one JSON-RPC request ("jsonrpc":"1.0", basic auth) to btcd and
// decodes the result into result (nil discards it). A nil params sends [].
// Errors btcd reports come back wrapping *RPCError.
func (n *Node) Call(ctx context.Context, method string, params []any, result any) error {
	n.mu.Lock()
	rpc := n.rpc
	running := n.proc != nil
	n.mu.Unlock()
	if !running {
		return fmt.Errorf("%s: %w", method, ErrNodeStopped)
	}
	return rpc.call(ctx, method, params, result)
}

// batch sends calls as one JSON-RPC batch request; see rpcClient.batch.
func (n *Node) batch(ctx context.Context, calls []batchCall) error {
	n.mu.Lock()
	rpc := n.rpc
	running := n.proc != nil
	n.mu.Unlock()
	if !running {
		return fmt.Errorf("batch: %w", ErrNodeStopped)
	}
	return rpc.batch(ctx, calls)
}

// Generate mines count blocks with btcd's `generate` (coinbases pay to the
// node's mining address) and returns their hashes in height order.
func (n *Node) Generate(ctx context.Context, count int) ([]chainhash.Hash, error) {
	var strs []string
	if err := n.Call(ctx, "generate", []any{count}, &strs); err != nil {
		return nil, err
	}
	hashes := make([]chainhash.Hash, len(strs))
	for i, s := range strs {
		h, err := chainhash.NewHashFromStr(s)
		if err != nil {
			return nil, fmt.Errorf("generate: hash %q: %w", s, err)
		}
		hashes[i] = *h
	}
	return hashes, nil
}

// BestBlock returns the hash and height of btcd's active tip.
func (n *Node) BestBlock(ctx context.Context) (chainhash.Hash, int32, error) {
	var reply struct {
		Hash   string `json:"hash"`
		Height int32  `json:"height"`
	}
	if err := n.Call(ctx, "getbestblock", nil, &reply); err != nil {
		return chainhash.Hash{}, 0, err
	}
	h, err := chainhash.NewHashFromStr(reply.Hash)
	if err != nil {
		return chainhash.Hash{}, 0, fmt.Errorf("getbestblock: hash %q: %w", reply.Hash, err)
	}
	return *h, reply.Height, nil
}

// BlockHash returns the hash of the active-chain block at height.
func (n *Node) BlockHash(ctx context.Context, height int32) (chainhash.Hash, error) {
	var s string
	if err := n.Call(ctx, "getblockhash", []any{height}, &s); err != nil {
		return chainhash.Hash{}, err
	}
	return parseHash("getblockhash", s)
}

// Block returns the block with hash (active chain or side branch).
func (n *Node) Block(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, error) {
	var s string
	if err := n.Call(ctx, "getblock", []any{hash.String(), 0}, &s); err != nil {
		return nil, err
	}
	raw, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("getblock %s: hex: %w", hash, err)
	}
	var blk wire.MsgBlock
	if err := blk.Deserialize(bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("getblock %s: decode: %w", hash, err)
	}
	return &blk, nil
}

// BlockHeader returns the header of the block with hash and its height. It
// works for side-branch blocks too, whose height btcd's verbose RPCs do not
// report: then the height comes from the block's BIP-34 coinbase.
func (n *Node) BlockHeader(ctx context.Context, hash chainhash.Hash) (wire.BlockHeader, int32, error) {
	blk, err := n.Block(ctx, hash)
	if err != nil {
		return wire.BlockHeader{}, 0, err
	}
	var reply struct {
		Height int32 `json:"height"`
	}
	if err := n.Call(ctx, "getblockheader", []any{hash.String(), true}, &reply); err == nil {
		return blk.Header, reply.Height, nil
	}
	height, err := CoinbaseHeight(n.params, blk)
	if err != nil {
		return wire.BlockHeader{}, 0, err
	}
	return blk.Header, height, nil
}

// SubmitBlock hands a block to btcd with submitblock. A block btcd refuses
// returns an error wrapping ErrBlockRejected with btcd's reason. A valid
// block on a side branch is accepted without becoming the tip.
func (n *Node) SubmitBlock(ctx context.Context, blk *wire.MsgBlock) error {
	var reason *string
	if err := n.Call(ctx, "submitblock", []any{blockHex(blk)}, &reason); err != nil {
		return err
	}
	return submitResult(blk, reason)
}

// submitResult turns submitblock's result (null, or a rejection reason)
// into an error.
func submitResult(blk *wire.MsgBlock, reason *string) error {
	if reason != nil && *reason != "" {
		return fmt.Errorf("submitblock %s: %w: %s", blk.BlockHash(), ErrBlockRejected, *reason)
	}
	return nil
}

// SubmitAsTip hands blk to btcd with submitblock and checks, in the same
// batch (one round trip), that it became the tip.
func (n *Node) SubmitAsTip(ctx context.Context, blk *wire.MsgBlock) error {
	var reason *string
	var best struct {
		Hash string `json:"hash"`
	}
	calls := []batchCall{
		{method: "submitblock", params: []any{blockHex(blk)}, result: &reason},
		{method: "getbestblock", result: &best},
	}
	if err := n.batch(ctx, calls); err != nil {
		return err
	}
	for _, c := range calls {
		if c.err != nil {
			return c.err
		}
	}
	if err := submitResult(blk, reason); err != nil {
		return err
	}
	if hash := blk.BlockHash(); best.Hash != hash.String() {
		return fmt.Errorf("block %s did not become the tip (tip %s)", hash, best.Hash)
	}
	return nil
}

// InvalidateBlock marks hash and its descendants invalid (invalidateblock),
// making btcd reorganise to the best remaining branch.
func (n *Node) InvalidateBlock(ctx context.Context, hash chainhash.Hash) error {
	return n.Call(ctx, "invalidateblock", []any{hash.String()}, nil)
}

// ReconsiderBlock undoes InvalidateBlock (reconsiderblock).
func (n *Node) ReconsiderBlock(ctx context.Context, hash chainhash.Hash) error {
	return n.Call(ctx, "reconsiderblock", []any{hash.String()}, nil)
}

// SendRawTransaction submits tx to btcd's mempool and returns its txid.
func (n *Node) SendRawTransaction(ctx context.Context, tx *wire.MsgTx) (chainhash.Hash, error) {
	var s string
	if err := n.Call(ctx, "sendrawtransaction", []any{txHex(tx)}, &s); err != nil {
		return chainhash.Hash{}, err
	}
	return parseHash("sendrawtransaction", s)
}

// txHex is the hex of tx's serialization (with witness when it has one).
func txHex(tx *wire.MsgTx) string {
	var buf bytes.Buffer
	buf.Grow(tx.SerializeSize())
	_ = tx.Serialize(&buf) // writing to a bytes.Buffer cannot fail
	return hex.EncodeToString(buf.Bytes())
}

// blockHex is the hex of blk's serialization.
func blockHex(blk *wire.MsgBlock) string {
	var buf bytes.Buffer
	buf.Grow(blk.SerializeSize())
	_ = blk.Serialize(&buf) // writing to a bytes.Buffer cannot fail
	return hex.EncodeToString(buf.Bytes())
}

func parseHash(method, s string) (chainhash.Hash, error) {
	h, err := chainhash.NewHashFromStr(s)
	if err != nil {
		return chainhash.Hash{}, fmt.Errorf("%s: hash %q: %w", method, s, err)
	}
	return *h, nil
}

// PrevOutScripts returns the output scripts spent by blk's non-coinbase
// inputs in block order (tx order, then input order), looked up with
// getrawtransaction; it needs a node started with TxIndex unless every
// spent tx is in the mempool.
func (n *Node) PrevOutScripts(ctx context.Context, blk *wire.MsgBlock) ([][]byte, error) {
	txs := make(map[chainhash.Hash]*wire.MsgTx)
	for _, tx := range blk.Transactions {
		txs[tx.TxHash()] = tx
	}
	var scripts [][]byte
	for _, tx := range blk.Transactions[1:] {
		for _, in := range tx.TxIn {
			op := in.PreviousOutPoint
			prev, ok := txs[op.Hash]
			if !ok {
				var err error
				if prev, err = n.RawTransaction(ctx, op.Hash); err != nil {
					return nil, err
				}
				txs[op.Hash] = prev
			}
			if int(op.Index) >= len(prev.TxOut) {
				return nil, fmt.Errorf("prevout %v: tx has %d outputs", op, len(prev.TxOut))
			}
			scripts = append(scripts, prev.TxOut[op.Index].PkScript)
		}
	}
	return scripts, nil
}

// RawTransaction returns a transaction by txid (getrawtransaction; needs
// TxIndex for confirmed transactions).
func (n *Node) RawTransaction(ctx context.Context, txid chainhash.Hash) (*wire.MsgTx, error) {
	var s string
	if err := n.Call(ctx, "getrawtransaction", []any{txid.String(), 0}, &s); err != nil {
		return nil, err
	}
	raw, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("getrawtransaction %s: hex: %w", txid, err)
	}
	var tx wire.MsgTx
	if err := tx.Deserialize(bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("getrawtransaction %s: decode: %w", txid, err)
	}
	return &tx, nil
}

// SoftforksActive reports whether btcd's getblockchaininfo says every named
// BIP-9 deployment is active for the next block.
func (n *Node) SoftforksActive(ctx context.Context, names ...string) (bool, error) {
	var info struct {
		BIP9 map[string]struct {
			Status string `json:"status"`
		} `json:"bip9_softforks"`
	}
	if err := n.Call(ctx, "getblockchaininfo", nil, &info); err != nil {
		return false, err
	}
	for _, name := range names {
		if info.BIP9[name].Status != "active" {
			return false, nil
		}
	}
	return true, nil
}
