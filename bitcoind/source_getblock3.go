package bitcoind

import (
	"context"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// verboseSource uses getblock <hash> 3 (Bitcoin Core >= 23): every vin
// carries its prevout, and every tx its raw hex.
type verboseSource struct{ c *Client }

var _ BlockSource = (*verboseSource)(nil)

// Mode implements BlockSource.
func (s *verboseSource) Mode() string { return ModeGetBlock3 }

// FetchBlock implements BlockSource.
func (s *verboseSource) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	var vb verboseBlock
	if err := s.c.Call(ctx, "getblock", []any{hash.String(), 3}, &vb); err != nil {
		return nil, nil, fmt.Errorf("fetch block %s via getblock 3: %w", hash, err)
	}
	blk, prev, err := vb.build(hash)
	if err != nil {
		return nil, nil, fmt.Errorf("fetch block %s: %w", hash, err)
	}
	return blk, prev, nil
}
