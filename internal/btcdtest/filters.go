package btcdtest

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// CFilter returns btcd's BIP-158 basic filter of block hash in wire form
// (CompactSize N prefix, then the Golomb-coded stream): the oracle for
// cfindexd's own filters.
func (n *Node) CFilter(ctx context.Context, hash chainhash.Hash) ([]byte, error) {
	var s string
	if err := n.Call(ctx, "getcfilter", []any{hash.String(), 0}, &s); err != nil {
		return nil, err
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("getcfilter %s: hex: %w", hash, err)
	}
	return b, nil
}

// CFilterHeader returns btcd's BIP-157 basic filter header of block hash in
// internal byte order. btcd prints it reversed like a block hash, so the
// string is parsed the way block hashes are.
func (n *Node) CFilterHeader(ctx context.Context, hash chainhash.Hash) (chainhash.Hash, error) {
	var s string
	if err := n.Call(ctx, "getcfilterheader", []any{hash.String(), 0}, &s); err != nil {
		return chainhash.Hash{}, err
	}
	return parseHash("getcfilterheader", s)
}
