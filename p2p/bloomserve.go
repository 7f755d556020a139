package p2p

import (
	"context"
	"errors"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/bip37"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
)

// The server's side of BIP-37 serving (package bip37): when each request
// is served, and what its refusal costs the peer.

// bip37Err maps a refusal of package bip37 onto an invalid request
// (disconnect without penalty); misbehaviour already wraps ErrMisbehaving.
func bip37Err(err error) error {
	var ir *bip37.InvalidRequestError
	if errors.As(err, &ir) {
		return invalidRequest("%s", ir.Reason)
	}
	return err
}

// bip37Emit is emit as package bip37 calls it.
func bip37Emit(emit emitFunc) bip37.Emit {
	return func(o bip37.Out) error {
		if o.Msg != nil {
			return emit(outbound{Msg: o.Msg, Enc: wire.BaseEncoding})
		}
		return emit(outbound{Command: o.Command, Frame: o.Frame})
	}
}

// tipHeight is the committed tip's height (0 on an empty store).
func (env *handlerEnv) tipHeight() uint32 {
	if tip, ok := env.view.Tip(); ok {
		return tip.Height
	}
	return 0
}

// tip is the committed tip's height; false on an empty store.
func (env *handlerEnv) tip() (uint32, bool) {
	tip, ok := env.view.Tip()
	return tip.Height, ok
}

// activeHeight is a block's height if it is on the active chain.
func (env *handlerEnv) activeHeight(hash chainhash.Hash) (uint32, bool) {
	height, active, err := env.view.HeightOf(hash)
	return height, err == nil && active
}

func handleFilterLoad(env *handlerEnv, st *peerState, m *wire.MsgFilterLoad) error {
	return bip37Err(env.bloom.FilterLoad(st.bloom, m, env.tipHeight()))
}

func handleFilterAdd(env *handlerEnv, st *peerState, m *wire.MsgFilterAdd) error {
	return bip37Err(env.bloom.FilterAdd(st.bloom, m, env.tipHeight()))
}

func handleFilterClear(env *handlerEnv, st *peerState) error {
	env.bloom.FilterClear(st.bloom)
	return nil
}

// bloomNotServed is the reaction to a BIP-37 message when serving is off.
func bloomNotServed(cmd string) error {
	return invalidRequest("%s is not served (no NODE_BLOOM)", cmd)
}

// serveFilteredBlock answers one MSG_FILTERED_BLOCK as Core's
// ProcessGetBlockData does, but for the upload target: the block must be
// one the view knows (else it goes in the notfound, as every block answer
// of this server); a historical block refused under the upload target
// disconnects the peer (uploadRefusal, as for a block); then package bip37
// answers (bip37.Server.FilteredBlock), and the answer's bytes count
// against the upload target and the peer's group share.
//
// Core refuses every filtered block once the target is reached, however
// recent ("|| inv.IsMsgFilteredBlk()"). cfindexd deliberately serves the
// filtered blocks of recent blocks whatever was served: a wallet needs
// them to follow the chain, and a merkleblock with its matched
// transactions is a small part of the block, so refusing it would lock
// wallets out for the rest of the day to save little.
func serveFilteredBlock(ctx context.Context, env *handlerEnv, st *peerState, iv *wire.InvVect, emit emitFunc) (found bool, err error) {
	if env.blocks == nil {
		return false, nil
	}
	hdr, _, err := env.view.HeaderByHash(iv.Hash)
	if err != nil {
		return false, ignoreNotFound(err)
	}
	if reason := env.uploadRefusal(st, hdr.Timestamp); reason != peerpolicy.NotRefused {
		return false, env.refuseUpload(reason, "filtered block")
	}
	found, sent, err := env.bloom.FilteredBlock(ctx, st.bloom, iv.Hash, bip37Emit(emit))
	if err != nil {
		return found, bip37Err(err)
	}
	if sent > 0 {
		env.countUpload(st, sent)
	}
	return found, nil
}

// handleMemPool is Core's MEMPOOL: without NODE_BLOOM the peer is
// disconnected without penalty, unless whitelisted (Core's noban
// permission), whose request is ignored; with the whole upload target
// reached, likewise, as Core does (its answer, an inv of the mempool and
// the transactions asked for next, is upload a node over its target does
// not spare; group shares are for blocks and do not apply); otherwise the
// announcer answers at its next turn with an inv of the mirror's
// transactions that match the peer's filter (all of them without a
// filter), a chunk at a time.
func handleMemPool(env *handlerEnv, st *peerState) error {
	if env.bloom == nil {
		if st.whitelisted {
			return nil
		}
		return bloomNotServed(wire.CmdMemPool)
	}
	if env.upload != nil && env.upload.Reached(env.now()) && !st.whitelisted {
		return env.refuseUpload(peerpolicy.RefusedTarget, "mempool request")
	}
	st.bloom.AskMempool()
	return nil
}

// startBloom readies the peer's BIP-37 state once the handshake is done.
func (p *peer) startBloom() {
	p.st.bloom.Start(p.srv.env.tipHeight(), p.st.wtxidRelay)
}

// bloomLoop is a BIP-37 peer's announcer goroutine (bip37.Server.Announce).
func (p *peer) bloomLoop(ctx context.Context) (err error) {
	defer p.recoverPeer("announcer", &err)
	return p.srv.env.bloom.Announce(ctx, p.st.bloom, bip37Emit(p.emit(ctx)))
}
