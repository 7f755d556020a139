package p2p

import (
	"context"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/mempool"
)

// Mempool is the node's mempool as the server sees it: a bounded mirror
// (the daemon adapts mempool.Mirror) it answers mempool and getdata from
// and whose new transactions it announces to BIP-37 peers. Safe for
// concurrent use.
type Mempool interface {
	// Get and GetWtx return a held transaction by txid or wtxid.
	Get(txid chainhash.Hash) (*mempool.Tx, bool)
	GetWtx(wtxid chainhash.Hash) (*mempool.Tx, bool)
	// Range returns up to max held transactions with Seq above after,
	// oldest first; LastSeq is the newest Seq.
	Range(after uint64, max int) []*mempool.Tx
	LastSeq() uint64
	// Subscribe delivers transactions as they are added.
	Subscribe(buffer int) MempoolSubscription
}

// MempoolSubscription is one subscriber's feed of added transactions: C
// delivers them (a subscriber that falls behind misses some), Close ends
// the feed.
type MempoolSubscription interface {
	C() <-chan *mempool.Tx
	Close()
}

// Mempool serving bounds.
const (
	// announceDelay batches new transactions for one inv: a matching
	// transaction is announced within the mirror's poll interval (1 s by
	// default, at once with ZMQ) plus this. Core trickles inventory to
	// inbound peers every 5 s on average (INBOUND_INVENTORY_BROADCAST_
	// INTERVAL); the spec asks for 2 s.
	announceDelay = 250 * time.Millisecond
	// announceBuffer bounds the transactions waiting to be matched for one
	// peer (the subscription's buffer, and as many taken off it); beyond
	// it the peer misses announcements rather than the server holding
	// more.
	announceBuffer = 1024
	// mempoolChunk is how many mirror transactions a mempool answer
	// matches at a time (under the CPU meter) and so the most entries of
	// one of its inv messages.
	mempoolChunk = 1000
	// mempoolInterval is the least time between two mempool answers to a
	// peer (more requests wait and coalesce), as Core answers them at its
	// 5-second inbound trickle.
	mempoolInterval = 5 * time.Second
)

// handleMemPool is Core's MEMPOOL: without NODE_BLOOM the peer is
// disconnected without penalty, unless whitelisted (Core's noban
// permission), whose request is ignored; with the upload target reached,
// likewise; otherwise the announcer answers at its next turn with an inv
// of the mirror's transactions that match the peer's filter (all of them
// without a filter), a chunk at a time.
func handleMemPool(env *handlerEnv, st *peerState) error {
	if env.bloom == nil {
		if st.whitelisted {
			return nil
		}
		return bloomNotServed(wire.CmdMemPool)
	}
	if env.blocks != nil && env.blocks.upload.Reached(env.now()) && !st.whitelisted {
		env.metrics.UploadTargetRefused()
		return fmt.Errorf("%w (mempool request)", errUploadTarget)
	}
	st.bloom.mempoolAsked.Store(true)
	st.bloom.signal()
	return nil
}

// bloomLoop is a BIP-37 peer's announcer goroutine: while the peer has a
// filter loaded (and relay on) it subscribes to the mirror, matches new
// transactions against the filter in batches (announceDelay) under the CPU
// meter and announces the matches; and it answers mempool requests.
func (p *peer) bloomLoop(ctx context.Context) (err error) {
	defer p.recoverPeer("announcer", &err)
	env, bp := p.srv.env, p.st.bloom
	emit := p.emit(ctx)
	var sub MempoolSubscription
	defer func() {
		if sub != nil {
			sub.Close()
		}
	}()
	var pending []*mempool.Tx
	var flush, mempoolDue <-chan time.Time
	var lastMempool time.Time
	for {
		var subC <-chan *mempool.Tx
		if sub != nil {
			subC = sub.C()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-bp.wake:
		case tx, ok := <-subC:
			if !ok {
				sub = nil
				continue
			}
			if len(pending) < announceBuffer {
				pending = append(pending, tx)
			}
			if flush == nil {
				flush = time.After(announceDelay)
			}
			continue
		case <-flush:
			flush = nil
			if err := p.announce(ctx, emit, pending); err != nil {
				return err
			}
			clear(pending)
			pending = pending[:0]
			continue
		case <-mempoolDue:
			mempoolDue = nil
		}
		relaying := bp.relaying()
		switch {
		case relaying && sub == nil && env.bloom.mempool != nil:
			sub = env.bloom.mempool.Subscribe(announceBuffer)
		case !relaying && sub != nil:
			sub.Close()
			sub = nil
			clear(pending)
			pending = pending[:0]
		}
		if bp.mempoolAsked.Load() && mempoolDue == nil {
			if wait := mempoolInterval - time.Since(lastMempool); wait > 0 {
				mempoolDue = time.After(wait)
				continue
			}
			bp.mempoolAsked.Store(false)
			lastMempool = time.Now()
			if err := p.answerMempool(ctx, emit); err != nil {
				return err
			}
		}
	}
}

// invFor is the inventory vector announcing tx to the peer: by wtxid after
// wtxidrelay (BIP-339), else by txid.
func (bp *bloomPeer) invFor(tx *mempool.Tx) *wire.InvVect {
	if bp.wtxidRelay {
		return wire.NewInvVect(invTypeWTx, &tx.Wtxid)
	}
	return wire.NewInvVect(wire.InvTypeTx, &tx.Txid)
}

// matchAll matches txs against the peer's filter (updating it) under the
// CPU meter; a peer without a filter matches every transaction only when
// all is set (a mempool request). It returns the inventory of the matches.
func (p *peer) matchAll(ctx context.Context, txs []*mempool.Tx, all bool) (*wire.MsgInv, error) {
	bs, bp := p.srv.env.bloom, p.st.bloom
	done, err := bs.work(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	inv := wire.NewMsgInvSizeHint(uint(min(len(txs), 64)))
	bp.mu.Lock()
	defer bp.mu.Unlock()
	for _, tx := range txs {
		if bp.filter == nil && !all {
			break
		}
		if bp.filter == nil || bp.filter.MatchTxAndUpdate(tx.Tx, &tx.Txid) {
			_ = inv.AddInvVect(bp.invFor(tx))
		}
	}
	return inv, nil
}

// announce matches a batch of new transactions and sends the inv of those
// that match.
func (p *peer) announce(ctx context.Context, emit emitFunc, txs []*mempool.Tx) error {
	if len(txs) == 0 || !p.st.bloom.relaying() {
		return nil
	}
	inv, err := p.matchAll(ctx, txs, false)
	if err != nil {
		return err
	}
	return p.sendTxInv(emit, inv, txs[len(txs)-1].Seq)
}

// answerMempool sends the inv of the mirror's transactions (as of now)
// that match the peer's filter, a chunk at a time.
func (p *peer) answerMempool(ctx context.Context, emit emitFunc) error {
	mp := p.srv.env.bloom.mempool
	if mp == nil {
		return nil
	}
	upTo := mp.LastSeq()
	for after := uint64(0); after < upTo; {
		chunk := mp.Range(after, mempoolChunk)
		for len(chunk) > 0 && chunk[len(chunk)-1].Seq > upTo {
			chunk = chunk[:len(chunk)-1]
		}
		if len(chunk) == 0 {
			break
		}
		after = chunk[len(chunk)-1].Seq
		inv, err := p.matchAll(ctx, chunk, true)
		if err != nil {
			return err
		}
		if err := p.sendTxInv(emit, inv, after); err != nil {
			return err
		}
	}
	return nil
}

// sendTxInv records that the peer may now ask for every mirror
// transaction up to seq (before the inv leaves, so that a getdata it
// prompts finds them allowed) and sends inv if it holds anything.
func (p *peer) sendTxInv(emit emitFunc, inv *wire.MsgInv, seq uint64) error {
	bp := p.st.bloom
	for {
		cur := bp.lastInvSeq.Load()
		if seq <= cur || bp.lastInvSeq.CompareAndSwap(cur, seq) {
			break
		}
	}
	if len(inv.InvList) == 0 {
		return nil
	}
	if err := emit(outbound{Msg: inv, Enc: wire.BaseEncoding}); err != nil {
		return err
	}
	p.srv.env.bloom.chargeFrames(1, len(inv.InvList)*invVectSize)
	p.srv.env.bloom.metrics.MempoolTxsAnnounced(len(inv.InvList))
	return nil
}

// mempoolTx returns the transaction a getdata entry asks for, if the peer
// may have it: held by the mirror and added before the last inv the peer
// was sent (Core's FindTxForGetData). Nil otherwise.
func (env *handlerEnv) mempoolTx(st *peerState, iv *wire.InvVect) *mempool.Tx {
	if env.bloom == nil || env.bloom.mempool == nil {
		return nil
	}
	var mt *mempool.Tx
	var ok bool
	switch iv.Type {
	case wire.InvTypeTx, wire.InvTypeWitnessTx:
		mt, ok = env.bloom.mempool.Get(iv.Hash)
	case invTypeWTx:
		mt, ok = env.bloom.mempool.GetWtx(iv.Hash)
	}
	if !ok || mt.Seq > st.bloom.lastInvSeq.Load() {
		return nil
	}
	return mt
}

// serveMempoolTx emits a mempool transaction: without witness for
// MSG_TX, with it for MSG_WITNESS_TX and MSG_WTX.
func serveMempoolTx(env *handlerEnv, mt *mempool.Tx, typ wire.InvType, emit emitFunc) error {
	if typ == wire.InvTypeTx && mt.Tx.HasWitness() {
		return emit(outbound{Command: wire.CmdTx, Frame: txFrame(env.net, mt.Tx)})
	}
	return emit(outbound{Command: wire.CmdTx, Frame: encodedFrame(env.net, wire.CmdTx, mt.Raw)})
}
