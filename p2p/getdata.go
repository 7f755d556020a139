package p2p

import (
	"context"
	"errors"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

// handleGetData serves blocks (MSG_BLOCK without witnesses, MSG_WITNESS_BLOCK
// with) that the view knows, fetched from the node through the block proxy.
// Everything else, and blocks the node cannot supply, is answered with one
// notfound at the end, as Core does. A historical block asked for once the
// upload target is reached ends the connection (errUploadTarget) unless the
// peer is whitelisted.
//
// With BIP-37 serving on, MSG_FILTERED_BLOCK gets a merkleblock and the
// matched transactions (serveFilteredBlock), and transactions the peer was
// told of are served from the mempool mirror (mempoolTx). Filtered blocks
// never go in the notfound when there is nothing to send (no filter, or
// serving off): Core sends no answer then. MSG_FILTERED_WITNESS_BLOCK is
// ignored, as Core ignores it (it is not a type Core serves).
func handleGetData(ctx context.Context, env *handlerEnv, st *peerState, m *wire.MsgGetData, emit emitFunc) error {
	notFound := wire.NewMsgNotFound()
	for _, iv := range m.InvList {
		witness := true
		switch iv.Type {
		case wire.InvTypeBlock:
			witness = false
		case wire.InvTypeWitnessBlock:
		case wire.InvTypeFilteredBlock:
			if env.bloom == nil {
				continue
			}
			found, err := serveFilteredBlock(ctx, env, st, iv, emit)
			if err != nil {
				return err
			}
			if !found {
				_ = notFound.AddInvVect(iv)
				continue
			}
			if err := continueGetBlocks(env, st, iv.Hash, emit); err != nil {
				return err
			}
			continue
		case wire.InvTypeFilteredWitnessBlock:
			continue
		case wire.InvTypeTx, wire.InvTypeWitnessTx, invTypeWTx:
			if mt := env.mempoolTx(st, iv); mt != nil {
				if err := serveMempoolTx(env, mt, iv.Type, emit); err != nil {
					return err
				}
				continue
			}
			_ = notFound.AddInvVect(iv)
			continue
		default:
			_ = notFound.AddInvVect(iv)
			continue
		}
		block, err := env.fetchBlock(ctx, st, iv, witness)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, errUploadTarget) {
				return err
			}
			_ = notFound.AddInvVect(iv)
			continue
		}
		hdr := make([]byte, wireframe.HeaderSize)
		wireframe.PutHeader(hdr, env.net, wire.CmdBlock, len(block.payload), block.sum)
		if err := emit(outbound{Command: wire.CmdBlock, Frame: hdr, Payload: block.payload}); err != nil {
			return err
		}
		env.blocks.upload.Add(wireframe.HeaderSize+len(block.payload), env.now())
		if err := continueGetBlocks(env, st, iv.Hash, emit); err != nil {
			return err
		}
	}
	if len(notFound.InvList) == 0 {
		return nil
	}
	return emit(outbound{Msg: notFound, Enc: wire.BaseEncoding})
}

// fetchBlock returns a block the view knows (active or stale) from the
// proxy. Blocks the view does not know are not fetched, so a peer cannot
// make the node look up arbitrary hashes.
func (env *handlerEnv) fetchBlock(ctx context.Context, st *peerState, iv *wire.InvVect, witness bool) (encodedBlock, error) {
	if env.blocks == nil {
		return encodedBlock{}, ErrNotFound
	}
	hdr, _, err := env.view.HeaderByHash(iv.Hash)
	if err != nil {
		return encodedBlock{}, err
	}
	if tip, ok := env.view.Tip(); ok {
		tipHdr, _, err := env.view.HeaderByHash(tip.Hash)
		if err == nil && env.blocks.historicalRefused(hdr.Timestamp, tipHdr.Timestamp, st.whitelisted, env.now()) {
			env.metrics.UploadTargetRefused()
			return encodedBlock{}, errUploadTarget
		}
	}
	block, err := env.blocks.Get(ctx, iv.Hash, witness)
	if err != nil && !errors.Is(err, ErrNotFound) && ctx.Err() == nil {
		env.log.Warn().Err(err).Stringer("block", iv.Hash).Msg("fetching block for a peer failed")
	}
	return block, err
}
