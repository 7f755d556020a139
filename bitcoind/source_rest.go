package bitcoind

import (
	"context"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"golang.org/x/sync/errgroup"
)

// restSource reads /rest/block/<hash>.bin and /rest/spenttxouts/<hash>.bin
// (Bitcoin Core >= 30 with -rest=1), both binary, fetched concurrently.
type restSource struct{ c *Client }

var _ BlockSource = (*restSource)(nil)

// Mode implements BlockSource.
func (s *restSource) Mode() string { return ModeREST }

// FetchBlock implements BlockSource.
func (s *restSource) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	var rawBlock, rawSpent []byte
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		rawBlock, err = s.c.restGet(gctx, "/rest/block/"+hash.String()+".bin")
		return err
	})
	g.Go(func() (err error) {
		rawSpent, err = s.c.restGet(gctx, "/rest/spenttxouts/"+hash.String()+".bin")
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, nil, fmt.Errorf("fetch block %s via REST: %w", hash, err)
	}
	blk, err := decodeBlock(rawBlock, hash)
	if err != nil {
		return nil, nil, fmt.Errorf("fetch block %s via REST: %w", hash, err)
	}
	spent, err := DecodeSpentTxOuts(rawSpent)
	if err != nil {
		return nil, nil, fmt.Errorf("fetch block %s via REST: %w", hash, err)
	}
	prev, err := prevScriptsFromSpent(blk, spent)
	if err != nil {
		return nil, nil, fmt.Errorf("fetch block %s via REST: %w", hash, err)
	}
	return blk, prev, nil
}
