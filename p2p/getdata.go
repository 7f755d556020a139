package p2p

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/blockproxy"
	"github.com/cfindexd/cfindexd/p2p/msgread"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
	"github.com/cfindexd/cfindexd/wireframe"
)

// errUploadTarget ends a peer that asks for a historical block after the
// upload target was reached (Core disconnects such a peer too).
var errUploadTarget = fmt.Errorf("%w: historical block requested with the upload target reached", errDisconnect)

// handleGetData serves blocks (MSG_BLOCK without witnesses, MSG_WITNESS_BLOCK
// with) that the view knows, fetched from the node through the block proxy.
// Everything else, and blocks the node cannot supply, is answered with one
// notfound at the end, as Core does. A historical block asked for once the
// upload target is reached ends the connection (errUploadTarget) unless the
// peer is whitelisted.
//
// With BIP-37 serving on, MSG_FILTERED_BLOCK gets a merkleblock and the
// matched transactions (serveFilteredBlock), and transactions the peer was
// told of are served from the mempool mirror (bip37.Server.MempoolTx).
// Filtered blocks never go in the notfound when there is nothing to send
// (no filter, or serving off): Core sends no answer then. MSG_FILTERED_WITNESS_BLOCK is
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
		case wire.InvTypeTx, wire.InvTypeWitnessTx, msgread.InvTypeWTx:
			if env.bloom != nil {
				if frame := env.bloom.MempoolTx(st.bloom, iv); frame != nil {
					if err := emit(outbound{Command: wire.CmdTx, Frame: frame}); err != nil {
						return err
					}
					continue
				}
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
		wireframe.PutHeader(hdr, env.net, wire.CmdBlock, len(block.Payload), block.Sum)
		if err := emit(outbound{Command: wire.CmdBlock, Frame: hdr, Payload: block.Payload}); err != nil {
			return err
		}
		env.upload.Add(wireframe.HeaderSize+len(block.Payload), env.now())
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
func (env *handlerEnv) fetchBlock(ctx context.Context, st *peerState, iv *wire.InvVect, witness bool) (blockproxy.Encoded, error) {
	if env.blocks == nil {
		return blockproxy.Encoded{}, ErrNotFound
	}
	hdr, _, err := env.view.HeaderByHash(iv.Hash)
	if err != nil {
		return blockproxy.Encoded{}, err
	}
	if tip, ok := env.view.Tip(); ok {
		tipHdr, _, err := env.view.HeaderByHash(tip.Hash)
		if err == nil && env.historicalRefused(hdr.Timestamp, tipHdr.Timestamp, st.whitelisted, env.now()) {
			env.metrics.UploadTargetRefused()
			return blockproxy.Encoded{}, errUploadTarget
		}
	}
	block, err := env.blocks.Get(ctx, iv.Hash, witness)
	if err != nil && !errors.Is(err, ErrNotFound) && ctx.Err() == nil {
		env.log.Warn().Err(err).Stringer("block", iv.Hash).Msg("fetching block for a peer failed")
	}
	return block, err
}

// historicalRefused reports whether a block with header time blockTime
// must be refused: the upload target is reached, the peer is not
// whitelisted, and the block is more than a week older than the tip (Core's
// rule; recent blocks are always served).
func (env *handlerEnv) historicalRefused(blockTime, tipTime time.Time, whitelisted bool, now time.Time) bool {
	return !whitelisted && tipTime.Sub(blockTime) > peerpolicy.HistoricalBlockAge && env.upload.Reached(now)
}
