package p2p

import (
	"context"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
)

// handleInv requests announced transactions when relay is enabled (by txid
// or, after wtxidrelay, by wtxid). Block announcements are ignored: this
// server follows its node, not its peers.
func handleInv(env *handlerEnv, st *peerState, m *wire.MsgInv, emit emitFunc) error {
	if env.relay == nil {
		return nil
	}
	req := wire.NewMsgGetData()
	now := time.Now()
	for _, iv := range m.InvList {
		switch iv.Type {
		case wire.InvTypeTx, wire.InvTypeWitnessTx, invTypeWTx:
		default:
			continue
		}
		if _, dup := st.txRequested[iv.Hash]; dup {
			continue
		}
		if len(st.txRequested) >= maxTxRequests {
			for h, at := range st.txRequested {
				if now.Sub(at) >= txRequestExpiry {
					delete(st.txRequested, h)
				}
			}
			if len(st.txRequested) >= maxTxRequests {
				continue
			}
		}
		st.txRequested[iv.Hash] = now
		typ := wire.InvTypeWitnessTx
		if iv.Type == invTypeWTx {
			typ = invTypeWTx
		}
		_ = req.AddInvVect(wire.NewInvVect(typ, &iv.Hash))
	}
	if len(req.InvList) == 0 {
		return nil
	}
	return emit(outbound{Msg: req, Enc: wire.BaseEncoding})
}

// handleTx hands a wallet's transaction to the node when relay is enabled.
// A refusal by the node is logged with its reason and the peer stays
// connected: a wallet may well broadcast a double spend or a low-fee
// transaction by mistake.
func handleTx(ctx context.Context, env *handlerEnv, st *peerState, tx *wire.MsgTx) error {
	txid, wtxid := tx.TxHash(), tx.WitnessHash()
	delete(st.txRequested, txid)
	delete(st.txRequested, wtxid)
	if env.relay == nil {
		env.log.Debug().Stringer("txid", txid).Msg("transaction ignored: relay disabled")
		return nil
	}
	if !st.txBudget.take(time.Now()) {
		env.log.Debug().Stringer("txid", txid).Msg("transaction dropped: peer over its relay rate")
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, env.relayWait)
	defer cancel()
	if _, err := env.relay.SendRawTransaction(ctx, tx); err != nil {
		env.log.Info().Err(err).Stringer("txid", txid).Msg("node refused transaction from peer")
		return nil
	}
	env.log.Debug().Stringer("txid", txid).Msg("transaction relayed to node")
	return nil
}

// handleNotFound forgets the transactions a peer says it no longer has.
func handleNotFound(st *peerState, m *wire.MsgNotFound) {
	for _, iv := range m.InvList {
		delete(st.txRequested, iv.Hash)
	}
}
