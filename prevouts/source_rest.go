package prevouts

import (
	"context"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"golang.org/x/sync/errgroup"

	"github.com/cfindexd/cfindexd/nodeclient"
)

// restSource reads /rest/block/<hash>.bin and /rest/spenttxouts/<hash>.bin
// (Bitcoin Core >= 30 with -rest=1), both binary, fetched concurrently.
type restSource struct{ c *nodeclient.Client }

var _ BlockSource = (*restSource)(nil)

// Mode implements BlockSource.
func (s *restSource) Mode() string { return ModeREST }

// FetchBlock implements BlockSource.
func (s *restSource) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	var rawBlock, rawSpent []byte
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		rawBlock, err = s.c.RESTGet(gctx, "/rest/block/"+hash.String()+".bin")
		return err
	})
	g.Go(func() (err error) {
		rawSpent, err = s.c.RESTGet(gctx, "/rest/spenttxouts/"+hash.String()+".bin")
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, nil, fmt.Errorf("fetch block %s via REST: %w", hash, err)
	}
	blk, err := nodeclient.DecodeBlock(rawBlock, hash)
	if err != nil {
		return nil, nil, fmt.Errorf("fetch block %s via REST: %w", hash, err)
	}
	spent, err := nodeclient.DecodeSpentTxOuts(rawSpent)
	if err != nil {
		return nil, nil, fmt.Errorf("fetch block %s via REST: %w", hash, err)
	}
	prev, err := nodeclient.PrevScriptsFromSpent(blk, spent)
	if err != nil {
		return nil, nil, fmt.Errorf("fetch block %s via REST: %w", hash, err)
	}
	return blk, prev, nil
}
