package p2p

import (
	"context"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/msgread"
)

// handleInv requests announced transactions when relay is enabled (by txid
// or, after wtxidrelay, by wtxid). Block announcements are ignored: this
// server follows its node, not its peers. Expired requests are dropped once
// per message, and each entry costs O(1), so an inv of 50,000 entries is
// linear work whatever is pending (txRequests).
func handleInv(env *handlerEnv, st *peerState, m *wire.MsgInv, emit emitFunc) error {
	if env.relay == nil {
		return nil
	}
	now := env.now()
	st.txRequests.Expire(now)
	req := wire.NewMsgGetData()
	for _, iv := range m.InvList {
		switch iv.Type {
		case wire.InvTypeTx, wire.InvTypeWitnessTx, msgread.InvTypeWTx:
		default:
			continue
		}
		if !st.txRequests.Add(iv.Hash, now) {
			continue // already asked for, or maxTxRequests outstanding
		}
		typ := wire.InvTypeWitnessTx
		if iv.Type == msgread.InvTypeWTx {
			typ = msgread.InvTypeWTx
		}
		_ = req.AddInvVect(wire.NewInvVect(typ, &iv.Hash))
	}
	if len(req.InvList) == 0 {
		return nil
	}
	return emit(outbound{Msg: req, Enc: wire.BaseEncoding})
}

// handleTx hands a wallet's transaction to the node when relay is enabled,
// within the peer's relay rate and the server's. Refusals (a rate, or the
// node: a wallet may well broadcast a double spend or a low-fee
// transaction by mistake) are logged at debug and the peer stays
// connected.
func handleTx(ctx context.Context, env *handlerEnv, st *peerState, tx *msgread.RawTx) error {
	st.txRequests.Remove(tx.TxID)
	st.txRequests.Remove(tx.WTxID)
	if env.relay == nil {
		env.log.Debug().Stringer("txid", tx.TxID).Msg("transaction ignored: relay disabled")
		return nil
	}
	now := env.now()
	if !st.txBudget.Take(now) {
		env.log.Debug().Stringer("txid", tx.TxID).Msg("transaction dropped: peer over its relay rate")
		return nil
	}
	if !env.relayRate.Take(now) {
		env.log.Debug().Stringer("txid", tx.TxID).Msg("transaction dropped: server over its relay rate")
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, env.relayWait)
	defer cancel()
	if _, err := env.relay.RelayTransaction(ctx, tx.Raw); err != nil {
		env.log.Debug().Err(err).Stringer("txid", tx.TxID).Msg("node refused transaction from peer")
		return nil
	}
	env.log.Debug().Stringer("txid", tx.TxID).Msg("transaction relayed to node")
	return nil
}

// handleNotFound forgets the transactions a peer says it no longer has.
func handleNotFound(st *peerState, m *wire.MsgNotFound) {
	for _, iv := range m.InvList {
		st.txRequests.Remove(iv.Hash)
	}
}
