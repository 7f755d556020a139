package p2p

import (
	"context"
	"errors"

	"github.com/btcsuite/btcd/wire/v2"
)

// handleGetData serves blocks (MSG_BLOCK without witnesses, MSG_WITNESS_BLOCK
// with) that the view knows, fetched from the node through the block cache.
// Everything else, and blocks the node cannot supply, is answered with one
// notfound at the end, as Core does.
func handleGetData(ctx context.Context, env *handlerEnv, m *wire.MsgGetData, emit emitFunc) error {
	notFound := wire.NewMsgNotFound()
	for _, iv := range m.InvList {
		enc := wire.WitnessEncoding
		switch iv.Type {
		case wire.InvTypeBlock:
			enc = wire.BaseEncoding
		case wire.InvTypeWitnessBlock:
		default:
			_ = notFound.AddInvVect(iv)
			continue
		}
		block, err := env.fetchBlock(ctx, iv)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			_ = notFound.AddInvVect(iv)
			continue
		}
		if err := emit(outbound{Msg: block, Enc: enc}); err != nil {
			return err
		}
	}
	if len(notFound.InvList) == 0 {
		return nil
	}
	return emit(outbound{Msg: notFound, Enc: wire.BaseEncoding})
}

// fetchBlock returns a block the view knows (active or stale) from the
// cache or the node. Blocks the view does not know are not fetched, so a
// peer cannot make the node look up arbitrary hashes.
func (env *handlerEnv) fetchBlock(ctx context.Context, iv *wire.InvVect) (*wire.MsgBlock, error) {
	if env.blocks == nil {
		return nil, ErrNotFound
	}
	if _, _, err := env.view.HeightOf(iv.Hash); err != nil {
		return nil, err
	}
	block, err := env.blocks.Get(ctx, iv.Hash)
	if err != nil && !errors.Is(err, ErrNotFound) && ctx.Err() == nil {
		env.log.Warn().Err(err).Stringer("block", iv.Hash).Msg("fetching block for a peer failed")
	}
	return block, err
}
