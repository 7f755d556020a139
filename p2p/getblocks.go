package p2p

import (
	"context"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/msgread"
)

// maxGetBlocksInv is Core's getblocks limit: at most 500 block hashes per
// answer.
const maxGetBlocksInv = 500

// handleGetBlocks answers getblocks as Core does, for BIP-37 wallets that
// download filtered blocks by inventory (bitcoinj): an inv of up to 500
// active-chain blocks after the first locator hash on the active chain
// (genesis when none is), stopping before the hash stop. When the answer
// is cut at 500, its last block becomes the peer's continuation block: when
// the peer asks for that block, it is sent an inv of the tip, which makes
// it ask for the next batch. More than 101 locator hashes is an invalid
// request (disconnect without penalty).
func handleGetBlocks(ctx context.Context, env *handlerEnv, st *peerState, m *wire.MsgGetBlocks, emit emitFunc) error {
	if len(m.BlockLocatorHashes) > msgread.MaxLocatorSize {
		return invalidRequest("getblocks locator of %d hashes, limit %d", len(m.BlockLocatorHashes), msgread.MaxLocatorSize)
	}
	var inv *wire.MsgInv
	var last chainhash.Hash
	_, err := env.underFilterWork(ctx, st, func() (outbound, error) {
		var err error
		inv, last, err = buildBlockInv(env, m)
		return outbound{}, err
	})
	if err != nil || inv == nil {
		return err
	}
	if len(inv.InvList) == maxGetBlocksInv {
		st.bloom.SetContinuation(last)
	}
	return emit(outbound{Msg: inv, Enc: wire.BaseEncoding})
}

// buildBlockInv returns the inv answering m and its last hash (nil: no
// answer).
func buildBlockInv(env *handlerEnv, m *wire.MsgGetBlocks) (*wire.MsgInv, chainhash.Hash, error) {
	tip, ok := env.view.Tip()
	if !ok {
		return nil, chainhash.Hash{}, nil
	}
	fork, _, err := locateFork(env.view, m.BlockLocatorHashes)
	if err != nil || fork >= tip.Height {
		return nil, chainhash.Hash{}, err
	}
	end := min(tip.Height, fork+maxGetBlocksInv)
	hdrs, err := env.view.Headers(fork+1, end)
	if err != nil {
		return nil, chainhash.Hash{}, ignoreNotFound(fmt.Errorf("getblocks %d..%d: %w", fork+1, end, err))
	}
	inv := wire.NewMsgInvSizeHint(uint(len(hdrs)))
	var last chainhash.Hash
	for i := range hdrs {
		h := hdrs[i].BlockHash()
		if h == m.HashStop {
			break
		}
		_ = inv.AddInvVect(wire.NewInvVect(wire.InvTypeBlock, &h))
		last = h
	}
	if len(inv.InvList) == 0 {
		return nil, chainhash.Hash{}, nil
	}
	return inv, last, nil
}

// continueGetBlocks sends the inv of the tip when the peer asks for its
// continuation block (Core's m_continuation_block), so that it sends its
// next getblocks.
func continueGetBlocks(env *handlerEnv, st *peerState, hash chainhash.Hash, emit emitFunc) error {
	if st.bloom == nil || !st.bloom.TakeContinuation(hash) {
		return nil
	}
	tip, ok := env.view.Tip()
	if !ok {
		return nil
	}
	inv := wire.NewMsgInv()
	_ = inv.AddInvVect(wire.NewInvVect(wire.InvTypeBlock, &tip.Hash))
	return emit(outbound{Msg: inv, Enc: wire.BaseEncoding})
}
