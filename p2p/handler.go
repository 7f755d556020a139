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

	"github.com/cfindexd/cfindexd/p2p/bip37"
	"github.com/cfindexd/cfindexd/p2p/blockproxy"
	"github.com/cfindexd/cfindexd/p2p/knownhashes"
	"github.com/cfindexd/cfindexd/p2p/msgread"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
	"github.com/cfindexd/cfindexd/p2p/spfilter"
)

// outbound is one response: a message for emit to encode (with Enc:
// BaseEncoding strips witnesses), or a frame encoded already (Command and
// Frame, the header alone when Payload, shared read-only with other peers,
// follows it). Frame may also hold Count complete frames of Command back
// to back (a chunk of cfilter frames), queued, budgeted and written as one
// entry; Count 0 means 1.
type outbound struct {
	Msg wire.Message
	Enc wire.MessageEncoding

	Command string
	Frame   []byte
	Payload []byte
	Count   int
	// Recycle, if set, takes Frame back once it is written (or dropped).
	Recycle func([]byte)
}

// size is the bytes the frame takes on the wire (0 until encoded).
func (o outbound) size() int { return len(o.Frame) + len(o.Payload) }

// cost is what the queued frame holds on the heap, charged to the send
// budgets: a pooled buffer (Recycle) is charged its capacity, however
// little of it the frame fills, so that small answers in large pooled
// buffers cannot hold more than the budgets say.
func (o outbound) cost() int64 {
	if o.Recycle != nil {
		return int64(cap(o.Frame) + len(o.Payload))
	}
	return int64(o.size())
}

// emitFunc queues a response for the peer. It blocks while the peer's send
// budget is used up and fails when the peer is gone or stalls.
type emitFunc func(outbound) error

// handlerEnv is what handlers share across peers.
type handlerEnv struct {
	view     ChainView
	net      wire.BitcoinNet
	stopWait time.Duration
	// filterWork bounds store reads and answer building across peers,
	// granting its slots to the peer with the fewest recent turns (a
	// turn queue; nil: unbounded).
	filterWork *peerpolicy.FairQueue
	// chunks and headerFrames hold the buffers of cfilter chunks and of
	// cfheaders frames that the writers are done with.
	chunks, headerFrames framePool
	// hashLists holds the block-hash lists of getcfilters answers being
	// streamed (MaxGetCFilters hashes each), reused between answers.
	hashLists slicePool[chainhash.Hash]
	blocks    *blockproxy.Proxy        // nil: no block fetcher
	upload    *peerpolicy.UploadTarget // nil: no block fetcher
	relay     TxRelayer                // nil: transaction relay disabled
	relayWait time.Duration
	relayRate *peerpolicy.SharedBucket // server-wide transaction relay rate
	bloom     *bip37.Server            // nil: BIP-37 serving off
	sp        *spfilter.Server         // nil: silent-payment type off
	decoded   *blockproxy.DecodedCache // BIP-37's decoded blocks; nil: none
	metrics   Metrics
	log       zerolog.Logger
	now       func() time.Time
}

// peerState is what handlers know about one peer. The reader goroutine owns
// it; the ticker and the eviction logic read the atomic fields and known,
// which are safe for that.
type peerState struct {
	pver          uint32
	preferHeaders atomic.Bool // sendheaders; read by the ticker
	wtxidRelay    bool        // wtxidrelay (before verack)
	sendAddrV2    bool
	feeFilter     int64
	// whitelisted exempts the peer from the upload target (and, in the
	// server, from eviction and discouragement).
	whitelisted bool
	// requester names the peer to the node-fetch gate and to the upload
	// target's group shares (set at admission, requesterOf).
	requester blockproxy.Requester
	// known holds block hashes the peer is known to have: announced to it,
	// sent in headers, or named first in its locator.
	known *knownhashes.Rolling
	// txRequests holds the transactions asked of the peer.
	txRequests *txRequests
	// txBudget limits the transactions a peer gets relayed to the node.
	txBudget peerpolicy.TokenBucket
	// bloom is the peer's BIP-37 state; nil when BIP-37 serving is off.
	bloom *bip37.Peer
	// filterShare is the peer's account in handlerEnv.filterWork, made
	// at its first request.
	filterShare *peerpolicy.Share

	// pingNonce and pingSent describe the ping in flight (written by the
	// ticker, read by the reader); minPing is the lowest round trip seen
	// and lastUseful when a request was last answered (unix ns), read by
	// eviction.
	pingNonce  atomic.Uint64
	pingSent   atomic.Int64
	minPing    atomic.Int64
	lastUseful atomic.Int64
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
		pver:       wire.ProtocolVersion,
		known:      knownhashes.NewRolling(1000, 0.01, k0, k1),
		txRequests: newTxRequests(maxTxRequests, txRequestExpiry),
		txBudget:   peerpolicy.TokenBucket{Rate: txRelayPerSec, Burst: txRelayBurst},
	}
}

// markUseful records that a request of the peer was answered at now.
func (st *peerState) markUseful(now time.Time) { st.lastUseful.Store(now.UnixNano()) }

// pong records the round trip of the ping the pong answers, if it does.
func (st *peerState) pong(nonce uint64, now time.Time) {
	if nonce == 0 || !st.pingNonce.CompareAndSwap(nonce, 0) {
		return
	}
	rtt := now.UnixNano() - st.pingSent.Load()
	if rtt <= 0 {
		rtt = 1
	}
	for {
		cur := st.minPing.Load()
		if cur != 0 && cur <= rtt || st.minPing.CompareAndSwap(cur, rtt) {
			return
		}
	}
}

// dispatch runs the handler for one message received after the handshake.
// An error wrapping ErrMisbehaving means disconnect and discourage; context
// errors and errDisconnect end the connection; any other error is a
// failure on this side, logged by the caller while the peer stays
// connected.
func dispatch(ctx context.Context, env *handlerEnv, st *peerState, msg wire.Message, emit emitFunc) error {
	if handled, err := dispatchSP(ctx, env, st, msg, emit); handled {
		return err
	}
	switch m := msg.(type) {
	case *wire.MsgGetCFilters:
		return handleGetCFilters(ctx, env, st, m, emit)
	case *wire.MsgGetCFHeaders:
		return handleGetCFHeaders(ctx, env, st, m, emit)
	case *wire.MsgGetCFCheckpt:
		return handleGetCFCheckpt(ctx, env, st, m, emit)
	case *wire.MsgGetHeaders:
		return handleGetHeaders(ctx, env, st, m, emit)
	case *wire.MsgGetData:
		return handleGetData(ctx, env, st, m, emit)
	case *wire.MsgInv:
		return handleInv(env, st, m, emit)
	case *msgread.RawTx:
		return handleTx(ctx, env, st, m)
	case *wire.MsgNotFound:
		handleNotFound(st, m)
	case *wire.MsgFilterLoad:
		return handleFilterLoad(env, st, m)
	case *wire.MsgFilterAdd:
		return handleFilterAdd(env, st, m)
	case *wire.MsgFilterClear:
		return handleFilterClear(env, st)
	case *wire.MsgMemPool:
		return handleMemPool(env, st)
	case *wire.MsgGetBlocks:
		return handleGetBlocks(ctx, env, st, m, emit)
	case *wire.MsgPing:
		return emit(outbound{Msg: wire.NewMsgPong(m.Nonce), Enc: wire.BaseEncoding})
	case *wire.MsgPong:
		st.pong(m.Nonce, env.now())
	case *wire.MsgSendHeaders:
		st.preferHeaders.Store(true)
	case *wire.MsgFeeFilter:
		st.feeFilter = m.MinFee
	case *wire.MsgSendAddrV2:
		return fmt.Errorf("%w: sendaddrv2 after verack", errDisconnect)
	case *wire.MsgWTxIdRelay:
		return fmt.Errorf("%w: wtxidrelay after verack", errDisconnect)
	case *wire.MsgVersion, *wire.MsgVerAck, *wire.MsgGetAddr:
		// A repeated version or verack is ignored as Core does; getaddr
		// gets no answer because this server never relays addresses.
	default:
		return fmt.Errorf("dispatch %s: %w", msg.Command(), errors.ErrUnsupported)
	}
	return nil
}

// encode serialises msg for the peer as a complete frame.
func (env *handlerEnv) encode(st *peerState, msg wire.Message) (outbound, error) {
	frame, err := encodeFrame(msg, st.pver, env.net, wire.BaseEncoding)
	if err != nil {
		return outbound{}, err
	}
	return outbound{Command: msg.Command(), Frame: frame}, nil
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

// filterGrantCost is what one filter-work slot costs a peer beyond the
// bytes it reads (lookups, the grant itself), counted towards the
// quantum of its turn.
const filterGrantCost = 2 << 10

// filterWorkQuantum is the work (bytes read and framed, and
// filterGrantCost a piece) one turn at the filter work covers: a request
// of up to this much costs the peer one turn, a getcfilters of a
// thousand mainnet filters (about 20 MB) some 160, each turn two chunks
// (chunkCap). A smaller quantum charges small requests (a getcfheaders)
// less beside large ones, a larger one makes one-block requests dearer
// beside a light client's hundred filters; two chunks keeps peers that
// pull the longest ranges sharing by bytes within a few percent.
const filterWorkQuantum = 128 << 10

// filterWorkHalfLife is how fast the turns a peer was given are
// forgotten: a light client that asked a few seconds ago counts as one
// that was served less than the peers pulling continuously.
const filterWorkHalfLife = 4 * time.Second

// sendShareHalfLife is how fast the shared send budget a peer was
// granted is forgotten.
const sendShareHalfLife = filterWorkHalfLife

// acquireFilterWork takes a slot of the server-wide filter work for the
// peer: granted to the waiting peer with the fewest recent turns, one
// waiting entry per peer. On nil, releaseFilterWork must follow
// (deferred: a panic must not keep the slot).
func (env *handlerEnv) acquireFilterWork(ctx context.Context, st *peerState) error {
	if env.filterWork == nil {
		return nil
	}
	if st.filterShare == nil {
		st.filterShare = env.filterWork.NewShare()
	}
	return st.filterShare.Acquire(ctx)
}

// releaseFilterWork returns the peer's slot, counting filterGrantCost and
// the bytes read under it towards its request; last ends the request
// (the next piece begins a new one), otherwise the request goes on in
// the peer's next piece.
func (env *handlerEnv) releaseFilterWork(st *peerState, bytes int, last bool) {
	if env.filterWork == nil {
		return
	}
	if last {
		st.filterShare.Release(float64(filterGrantCost + bytes))
	} else {
		st.filterShare.Yield(float64(filterGrantCost + bytes))
	}
}

// underFilterWork runs build under a filter-work slot of the peer, as a
// request of one piece charged the size of the frame it returns.
func (env *handlerEnv) underFilterWork(ctx context.Context, st *peerState, build func() (outbound, error)) (outbound, error) {
	return env.pieceUnderFilterWork(ctx, st, func() (outbound, bool, error) {
		out, err := build()
		return out, true, err
	})
}

// pieceUnderFilterWork runs build under a filter-work slot of the peer as
// one piece of a request, charged the size of the frame it returns; build
// says whether its piece is the request's last (a failed or panicking
// piece ends the request too).
func (env *handlerEnv) pieceUnderFilterWork(ctx context.Context, st *peerState, build func() (out outbound, last bool, err error)) (out outbound, err error) {
	if err := env.acquireFilterWork(ctx, st); err != nil {
		return outbound{}, err
	}
	last := true
	defer func() { env.releaseFilterWork(st, out.size(), last || err != nil) }()
	out, last, err = build()
	return out, err
}

// answerUnderFilterWork builds an answer under a filter-work slot, so that
// the transient memory of many answers built at once stays bounded, then
// emits it and marks the peer useful. An answer without a frame is no
// answer (nothing is sent).
func (env *handlerEnv) answerUnderFilterWork(ctx context.Context, st *peerState, emit emitFunc, build func() (outbound, error)) error {
	out, err := env.underFilterWork(ctx, st, build)
	if err != nil || out.Frame == nil {
		return err
	}
	if err := emit(out); err != nil {
		return err
	}
	st.markUseful(env.now())
	return nil
}
