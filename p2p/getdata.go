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

// errUploadTarget ends a peer that asks for a historical block (plain or
// filtered) past the upload target or past its network group's share of
// it, or for the mempool once the target is reached (Core disconnects
// such a peer too; it has no group shares).
var errUploadTarget = fmt.Errorf("%w: request refused past the upload target", errDisconnect)

// handleGetData serves blocks (MSG_BLOCK without witnesses, MSG_WITNESS_BLOCK
// with) that the view knows, fetched from the node through the block proxy.
// Everything else, and blocks the node cannot supply, is answered with one
// notfound at the end, as Core does. A historical block asked for past the
// upload target or the peer's group share of it ends the connection
// (errUploadTarget, uploadRefusal) unless the peer is whitelisted.
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
		env.countUpload(st, wireframe.HeaderSize+len(block.Payload))
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
// proxy, in the peer's turn at its gate, unless the upload target refuses
// it to the peer. Blocks the view does not know are not fetched, so a peer
// cannot make the node look up arbitrary hashes.
func (env *handlerEnv) fetchBlock(ctx context.Context, st *peerState, iv *wire.InvVect, witness bool) (blockproxy.Encoded, error) {
	if env.blocks == nil {
		return blockproxy.Encoded{}, ErrNotFound
	}
	hdr, _, err := env.view.HeaderByHash(iv.Hash)
	if err != nil {
		return blockproxy.Encoded{}, err
	}
	if reason := env.uploadRefusal(st, hdr.Timestamp); reason != peerpolicy.NotRefused {
		return blockproxy.Encoded{}, env.refuseUpload(reason, "block")
	}
	block, err := env.blocks.Get(ctx, st.requester, iv.Hash, witness)
	if err != nil && !errors.Is(err, ErrNotFound) && ctx.Err() == nil {
		env.log.Warn().Err(err).Stringer("block", iv.Hash).Msg("fetching block for a peer failed")
	}
	return block, err
}

// uploadRefusal says whether a block whose header time is blockTime is
// refused to the peer, and why: only historical blocks are (more than
// peerpolicy.HistoricalBlockAge older than the tip; Core compares with its
// best header, the tip here), once the window served the whole target or
// the peer's network group its share of it (peerpolicy.UploadTarget), and
// never to a whitelisted peer. Recent blocks are always served.
func (env *handlerEnv) uploadRefusal(st *peerState, blockTime time.Time) peerpolicy.UploadRefusal {
	if st.whitelisted || env.upload == nil {
		return peerpolicy.NotRefused
	}
	tip, ok := env.view.Tip()
	if !ok {
		return peerpolicy.NotRefused
	}
	tipHdr, _, err := env.view.HeaderByHash(tip.Hash)
	if err != nil || tipHdr.Timestamp.Sub(blockTime) <= peerpolicy.HistoricalBlockAge {
		return peerpolicy.NotRefused
	}
	return env.upload.HistoricalRefusal(st.requester.Group, env.now())
}

// refuseUpload counts a refusal of what (a block, a filtered block, a
// mempool request) for reason and returns the error that ends the peer.
func (env *handlerEnv) refuseUpload(reason peerpolicy.UploadRefusal, what string) error {
	env.metrics.UploadTargetRefused(string(reason))
	return fmt.Errorf("%w (%s, %s)", errUploadTarget, what, reason)
}

// countUpload counts n block bytes sent to the peer against the upload
// target and the peer's group share (whitelisted peers' bytes count too:
// they are exempt from refusals, not from the node's bandwidth).
func (env *handlerEnv) countUpload(st *peerState, n int) {
	env.upload.Add(st.requester.Group, n, env.now())
}
