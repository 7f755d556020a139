package nodeclient

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// HeaderInfo is what getblockheader (verbose) tells about a block.
type HeaderInfo struct {
	Hash     chainhash.Hash
	Height   uint32
	PrevHash chainhash.Hash // zero for genesis
	// Confirmations is -1 for a block that is not on the node's active
	// chain (stale), 1 for the tip.
	Confirmations int64
	// Time is the block's header timestamp.
	Time time.Time
}

// ChainInfo is the part of getblockchaininfo the indexer needs.
type ChainInfo struct {
	Chain    string // "main", "test", "testnet4", "signet", "regtest" (btcd: "mainnet", "testnet3", "simnet", ...)
	Blocks   uint32
	Headers  uint32
	BestHash chainhash.Hash
	// IBD is true while the node is in initial block download. btcd does
	// not report it (always false there).
	IBD         bool
	Pruned      bool
	PruneHeight uint32
}

// GetBestBlockHash returns the hash of the node's active tip.
func (c *Client) GetBestBlockHash(ctx context.Context) (chainhash.Hash, error) {
	var s string
	if err := c.Call(ctx, "getbestblockhash", nil, &s); err != nil {
		return chainhash.Hash{}, err
	}
	return parseHash("getbestblockhash", s)
}

// GetBlockHash returns the hash of the active-chain block at height.
func (c *Client) GetBlockHash(ctx context.Context, height int64) (chainhash.Hash, error) {
	var s string
	if err := c.Call(ctx, "getblockhash", []any{height}, &s); err != nil {
		return chainhash.Hash{}, err
	}
	return parseHash("getblockhash", s)
}

// GetBlockHeaderVerbose returns height, parent, confirmations and time of a
// block.
func (c *Client) GetBlockHeaderVerbose(ctx context.Context, hash chainhash.Hash) (HeaderInfo, error) {
	var r struct {
		Hash          string `json:"hash"`
		Height        uint32 `json:"height"`
		Confirmations int64  `json:"confirmations"`
		Prev          string `json:"previousblockhash"`
		Time          int64  `json:"time"`
	}
	if err := c.Call(ctx, "getblockheader", []any{hash.String(), true}, &r); err != nil {
		return HeaderInfo{}, err
	}
	info := HeaderInfo{Height: r.Height, Confirmations: r.Confirmations, Time: time.Unix(r.Time, 0)}
	var err error
	if info.Hash, err = parseHash("getblockheader", r.Hash); err != nil {
		return HeaderInfo{}, err
	}
	if info.Hash != hash {
		return HeaderInfo{}, fmt.Errorf("%w: getblockheader %s returned block %s", ErrMalformed, hash, info.Hash)
	}
	if r.Prev != "" {
		if info.PrevHash, err = parseHash("getblockheader", r.Prev); err != nil {
			return HeaderInfo{}, err
		}
	}
	return info, nil
}

// GetRawBlock fetches the serialized block (getblock <hash> 0) and decodes
// the hex straight into a wire.MsgBlock. The block's hash is checked.
func (c *Client) GetRawBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, error) {
	blocks, err := c.GetRawBlocks(ctx, []chainhash.Hash{hash})
	if err != nil {
		return nil, err
	}
	return blocks[0], nil
}

// GetChainInfo returns the node's chain state (getblockchaininfo).
func (c *Client) GetChainInfo(ctx context.Context) (ChainInfo, error) {
	var r struct {
		Chain       string `json:"chain"`
		Blocks      uint32 `json:"blocks"`
		Headers     uint32 `json:"headers"`
		Best        string `json:"bestblockhash"`
		IBD         bool   `json:"initialblockdownload"`
		Pruned      bool   `json:"pruned"`
		PruneHeight uint32 `json:"pruneheight"`
	}
	if err := c.Call(ctx, "getblockchaininfo", nil, &r); err != nil {
		return ChainInfo{}, err
	}
	best, err := parseHash("getblockchaininfo", r.Best)
	if err != nil {
		return ChainInfo{}, err
	}
	return ChainInfo{Chain: r.Chain, Blocks: r.Blocks, Headers: r.Headers, BestHash: best, IBD: r.IBD, Pruned: r.Pruned, PruneHeight: r.PruneHeight}, nil
}

// CheckGenesis compares the node's block at height 0 with want and returns
// an error wrapping ErrWrongNetwork when they differ.
func (c *Client) CheckGenesis(ctx context.Context, want chainhash.Hash) error {
	got, err := c.GetBlockHash(ctx, 0)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%w: node genesis is %s, expected %s (point the node and this server at the same network)", ErrWrongNetwork, got, want)
	}
	return nil
}

// SendRawTransaction broadcasts tx and returns its txid.
func (c *Client) SendRawTransaction(ctx context.Context, tx *wire.MsgTx) (chainhash.Hash, error) {
	var buf bytes.Buffer
	if err := tx.Serialize(&buf); err != nil {
		return chainhash.Hash{}, fmt.Errorf("sendrawtransaction: encode: %w", err)
	}
	var s string
	if err := c.Call(ctx, "sendrawtransaction", []any{hex.EncodeToString(buf.Bytes())}, &s); err != nil {
		return chainhash.Hash{}, err
	}
	return parseHash("sendrawtransaction", s)
}

// GetRawTransactions fetches the transactions with the given txids in one
// JSON-RPC batch of getrawtransaction calls (needs -txindex on the node for
// confirmed transactions). Each transaction is checked to hash to its txid.
// The first failing element's error is returned.
func (c *Client) GetRawTransactions(ctx context.Context, txids []chainhash.Hash) ([]*wire.MsgTx, error) {
	txs := make([]*wire.MsgTx, len(txids))
	err := c.GetRawTxs(ctx, txids, false, func(i int, raw []byte, _ wirescan.ScannedTx) error {
		tx := new(wire.MsgTx)
		if err := tx.Deserialize(bytes.NewReader(raw)); err != nil {
			return fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		txs[i] = tx
		return nil
	})
	if err != nil {
		return nil, err
	}
	return txs, nil
}

// GetRawTxs fetches the transactions with the given txids in one
// getrawtransaction batch, reads each in place (wirescan.ScanTx, on a copy of the
// reply when clone is set, so that it outlives the call) and checks that
// it hashes to its txid, then hands it to keep.
func (c *Client) GetRawTxs(ctx context.Context, txids []chainhash.Hash, clone bool, keep func(i int, raw []byte, t wirescan.ScannedTx) error) error {
	if len(txids) == 0 {
		return nil
	}
	params := make([][]any, len(txids))
	for i, id := range txids {
		params[i] = []any{id.String(), 0}
	}
	errs := make([]error, len(txids))
	use := func(i int, raw []byte) error {
		if clone {
			raw = bytes.Clone(raw)
		}
		t, err := wirescan.ScanTx(raw)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		if t.TxID != txids[i] {
			return fmt.Errorf("%w: returned tx %s", ErrMalformed, t.TxID)
		}
		return keep(i, raw, t)
	}
	if err := c.callHexBatch(ctx, "getrawtransaction", params, use, func(i int, err error) { errs[i] = err }); err != nil {
		return err
	}
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("getrawtransaction %s: %w", txids[i], err)
		}
	}
	return nil
}

func parseHash(method, s string) (chainhash.Hash, error) {
	h, err := chainhash.NewHashFromStr(s)
	if err != nil || len(s) != 2*chainhash.HashSize {
		return chainhash.Hash{}, fmt.Errorf("%w: %s: bad hash %q", ErrMalformed, method, s)
	}
	return *h, nil
}

// DecodeBlock deserializes raw and checks that it is the block asked for.
func DecodeBlock(raw []byte, want chainhash.Hash) (*wire.MsgBlock, error) {
	var blk wire.MsgBlock
	if err := blk.Deserialize(bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("%w: block %s: %v", ErrMalformed, want, err)
	}
	if got := blk.BlockHash(); got != want {
		return nil, fmt.Errorf("%w: asked for block %s, got %s", ErrMalformed, want, got)
	}
	return &blk, nil
}

// GetBlockHashes returns the active chain's block hashes at heights
// first..first+n-1 with one getblockhash batch, read by the hex fast path
// (a block hash is hex in display order, so its bytes are reversed).
func (c *Client) GetBlockHashes(ctx context.Context, first, n uint32) ([]chainhash.Hash, error) {
	if n == 0 {
		return nil, nil
	}
	params := make([][]any, n)
	for i := range params {
		params[i] = []any{int64(first) + int64(i)}
	}
	hashes := make([]chainhash.Hash, n)
	errs := make([]error, n)
	use := func(i int, raw []byte) error {
		if len(raw) != chainhash.HashSize {
			return fmt.Errorf("%w: getblockhash: %d-byte hash", ErrMalformed, len(raw))
		}
		for j := range raw {
			hashes[i][j] = raw[len(raw)-1-j]
		}
		return nil
	}
	if err := c.callHexBatch(ctx, "getblockhash", params, use, func(i int, err error) { errs[i] = err }); err != nil {
		return nil, fmt.Errorf("getblockhash %d..%d: %w", first, first+n-1, err)
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("getblockhash %d: %w", first+uint32(i), err)
		}
	}
	return hashes, nil
}

// codeOutOfRange is RPC_INVALID_PARAMETER, which getblockhash answers for a
// height above the tip ("Block height out of range").
const codeOutOfRange = -8

// IdentifyingBlock returns the block that tells the chain of the node
// behind c from another chain of its network (nodep2p.IdentifyBlock): its block 1,
// the first block that tells one chain of a network from another; ok is
// false while the chain is only its genesis block.
func (c *Client) IdentifyingBlock(ctx context.Context) (chainhash.Hash, bool, error) {
	hash, err := c.GetBlockHash(ctx, 1)
	var rpcErr *RPCError
	if errors.As(err, &rpcErr) && rpcErr.Code == codeOutOfRange {
		return chainhash.Hash{}, false, nil
	}
	if err != nil {
		return chainhash.Hash{}, false, err
	}
	return hash, true, nil
}
