package p2p

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"
)

// outbound is one response message and the encoding to write it with
// (BaseEncoding strips witnesses from a block requested as MSG_BLOCK).
type outbound struct {
	Msg wire.Message
	Enc wire.MessageEncoding
}

// emitFunc queues a response for the peer. It blocks while the peer's send
// budget is used up and fails when the peer is gone.
type emitFunc func(outbound) error

// handlerEnv is what handlers share across peers.
type handlerEnv struct {
	view     ChainView
	stopWait time.Duration
	// filterWork is a semaphore bounding filter reads across peers.
	filterWork chan struct{}
	// filterWaiting counts requests waiting for a filterWork slot.
	filterWaiting atomic.Int64
	blocks        *blockCache // nil: no block fetcher
	relay         TxRelayer   // nil: transaction relay disabled
	relayWait     time.Duration
	log           zerolog.Logger
}

// peerState is what handlers know about one peer. The reader goroutine owns
// it; the ticker reads preferHeaders and known, which are safe for that.
type peerState struct {
	pver          uint32
	preferHeaders atomic.Bool // sendheaders; read by the ticker
	wtxidRelay    bool        // wtxidrelay (before verack)
	sendAddrV2    bool
	feeFilter     int64
	// known holds block hashes the peer is known to have: announced to it,
	// sent in headers, or named first in its locator.
	known *rollingBloom
	// txRequested holds tx hashes asked for with getdata and not yet
	// received or answered with notfound, with when they were asked for
	// (bounded by maxTxRequests; entries older than txRequestExpiry are
	// dropped when it is full).
	txRequested map[chainhash.Hash]time.Time
	// txBudget limits the transactions a peer gets relayed to the node.
	txBudget tokenBucket
}

// Transaction relay bounds per peer. A wallet broadcasts a transaction now
// and then; a peer that floods (each relayed transaction is a
// sendrawtransaction call to the node) has the excess dropped, and
// requests it never answers stop counting after a while.
const (
	maxTxRequests   = 1000
	txRequestExpiry = 2 * time.Minute
	txRelayPerSec   = 10
	txRelayBurst    = 100
)

// newPeerState returns the state of a fresh peer.
func newPeerState(k0, k1 uint64) *peerState {
	return &peerState{
		pver:        wire.ProtocolVersion,
		known:       newRollingBloom(1000, 0.01, k0, k1),
		txRequested: make(map[chainhash.Hash]time.Time),
		txBudget:    tokenBucket{rate: txRelayPerSec, burst: txRelayBurst},
	}
}

// dispatch runs the handler for one message received after the handshake.
// An error wrapping ErrMisbehaving means disconnect and ban; context errors
// and errDisconnect end the connection; any other error is a failure on
// this side, logged by the caller while the peer stays connected.
func dispatch(ctx context.Context, env *handlerEnv, st *peerState, msg wire.Message, emit emitFunc) error {
	switch m := msg.(type) {
	case *wire.MsgGetCFilters:
		return handleGetCFilters(ctx, env, m, emit)
	case *wire.MsgGetCFHeaders:
		return handleGetCFHeaders(ctx, env, m, emit)
	case *wire.MsgGetCFCheckpt:
		return handleGetCFCheckpt(ctx, env, m, emit)
	case *wire.MsgGetHeaders:
		return handleGetHeaders(env, st, m, emit)
	case *wire.MsgGetData:
		return handleGetData(ctx, env, m, emit)
	case *wire.MsgInv:
		return handleInv(env, st, m, emit)
	case *wire.MsgTx:
		return handleTx(ctx, env, st, m)
	case *wire.MsgNotFound:
		handleNotFound(st, m)
	case *wire.MsgPing:
		return emit(outbound{Msg: wire.NewMsgPong(m.Nonce), Enc: wire.BaseEncoding})
	case *wire.MsgSendHeaders:
		st.preferHeaders.Store(true)
	case *wire.MsgFeeFilter:
		st.feeFilter = m.MinFee
	case *wire.MsgSendAddrV2:
		return misbehaving("sendaddrv2 after verack")
	case *wire.MsgWTxIdRelay:
		return misbehaving("wtxidrelay after verack")
	case *wire.MsgPong, *wire.MsgVersion, *wire.MsgVerAck, *wire.MsgGetAddr:
		// Pongs only prove liveness (any message resets the idle timer);
		// a repeated version or verack is ignored as Core does; getaddr
		// gets no answer because this server never relays addresses.
	default:
		return fmt.Errorf("dispatch %s: %w", msg.Command(), errors.ErrUnsupported)
	}
	return nil
}

// awaitStop looks up stop, waiting up to env.stopWait for a commit that
// makes it known. known=false means still unknown after the wait.
func (env *handlerEnv) awaitStop(ctx context.Context, stop chainhash.Hash) (height uint32, active, known bool, err error) {
	var timer *time.Timer
	for {
		changed := env.view.TipChanged()
		height, active, err = env.view.HeightOf(stop)
		if err == nil {
			return height, active, true, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return 0, false, false, fmt.Errorf("look up stop hash %s: %w", stop, err)
		}
		if timer == nil {
			if env.stopWait <= 0 {
				return 0, false, false, nil
			}
			timer = time.NewTimer(env.stopWait)
			defer timer.Stop()
		}
		select {
		case <-changed:
		case <-timer.C:
			return 0, false, false, nil
		case <-ctx.Done():
			return 0, false, false, ctx.Err()
		}
	}
}

// acquireFilterWork takes a slot of the server-wide filter-read semaphore.
func (env *handlerEnv) acquireFilterWork(ctx context.Context) (release func(), err error) {
	if env.filterWork == nil {
		return func() {}, nil
	}
	select {
	case env.filterWork <- struct{}{}:
		return func() { <-env.filterWork }, nil
	default:
	}
	env.filterWaiting.Add(1)
	defer env.filterWaiting.Add(-1)
	select {
	case env.filterWork <- struct{}{}:
		return func() { <-env.filterWork }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
