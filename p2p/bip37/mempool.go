package bip37

import (
	"context"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/mempool"
	"github.com/cfindexd/cfindexd/p2p/msgread"
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
	Subscribe(buffer int) Subscription
}

// Subscription is one subscriber's feed of added transactions: C
// delivers them (a subscriber that falls behind misses some), Close ends
// the feed.
type Subscription interface {
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

// Announce is a peer's announcer, run in a goroutine of its own until ctx
// ends or emit fails: while the peer has a filter loaded (and relay on) it
// subscribes to the mirror, matches new transactions against the filter in
// batches (announceDelay) under the CPU meter and announces the matches;
// and it answers mempool requests (AskMempool).
func (s *Server) Announce(ctx context.Context, p *Peer, emit Emit) error {
	var sub Subscription
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
		case <-p.wake:
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
			if err := s.announce(ctx, p, emit, pending); err != nil {
				return err
			}
			clear(pending)
			pending = pending[:0]
			continue
		case <-mempoolDue:
			mempoolDue = nil
		}
		relaying := p.relaying()
		switch {
		case relaying && sub == nil && s.mempool != nil:
			sub = s.mempool.Subscribe(announceBuffer)
		case !relaying && sub != nil:
			sub.Close()
			sub = nil
			clear(pending)
			pending = pending[:0]
		}
		if p.mempoolAsked.Load() && mempoolDue == nil {
			if wait := mempoolInterval - time.Since(lastMempool); wait > 0 {
				mempoolDue = time.After(wait)
				continue
			}
			p.mempoolAsked.Store(false)
			lastMempool = time.Now()
			if err := s.answerMempool(ctx, p, emit); err != nil {
				return err
			}
		}
	}
}

// invFor is the inventory vector announcing tx to the peer: by wtxid after
// wtxidrelay (BIP-339), else by txid.
func (p *Peer) invFor(tx *mempool.Tx) *wire.InvVect {
	if p.wtxidRelay {
		return wire.NewInvVect(msgread.InvTypeWTx, &tx.Wtxid)
	}
	return wire.NewInvVect(wire.InvTypeTx, &tx.Txid)
}

// matchAll matches txs against the peer's filter (updating it) under the
// CPU meter; a peer without a filter matches every transaction only when
// all is set (a mempool request). It returns the inventory of the matches.
func (s *Server) matchAll(ctx context.Context, p *Peer, txs []*mempool.Tx, all bool) (*wire.MsgInv, error) {
	done, err := s.work(ctx, p)
	if err != nil {
		return nil, err
	}
	defer done()
	inv := wire.NewMsgInvSizeHint(uint(min(len(txs), 64)))
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, tx := range txs {
		if p.filter == nil && !all {
			break
		}
		if p.filter == nil || p.filter.MatchTxAndUpdate(tx.Tx, &tx.Txid) {
			_ = inv.AddInvVect(p.invFor(tx))
		}
	}
	return inv, nil
}

// announce matches a batch of new transactions and sends the inv of those
// that match.
func (s *Server) announce(ctx context.Context, p *Peer, emit Emit, txs []*mempool.Tx) error {
	if len(txs) == 0 || !p.relaying() {
		return nil
	}
	inv, err := s.matchAll(ctx, p, txs, false)
	if err != nil {
		return err
	}
	return s.sendTxInv(p, emit, inv, txs[len(txs)-1].Seq)
}

// answerMempool sends the inv of the mirror's transactions (as of now)
// that match the peer's filter, a chunk at a time.
func (s *Server) answerMempool(ctx context.Context, p *Peer, emit Emit) error {
	mp := s.mempool
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
		inv, err := s.matchAll(ctx, p, chunk, true)
		if err != nil {
			return err
		}
		if err := s.sendTxInv(p, emit, inv, after); err != nil {
			return err
		}
	}
	return nil
}

// sendTxInv records that the peer may now ask for every mirror
// transaction up to seq (before the inv leaves, so that a getdata it
// prompts finds them allowed) and sends inv if it holds anything.
func (s *Server) sendTxInv(p *Peer, emit Emit, inv *wire.MsgInv, seq uint64) error {
	for {
		cur := p.lastInvSeq.Load()
		if seq <= cur || p.lastInvSeq.CompareAndSwap(cur, seq) {
			break
		}
	}
	if len(inv.InvList) == 0 {
		return nil
	}
	if err := emit(Out{Msg: inv}); err != nil {
		return err
	}
	s.chargeFrames(p, 1, len(inv.InvList)*msgread.InvVectSize)
	s.metrics.MempoolTxsAnnounced(len(inv.InvList))
	return nil
}

// MempoolTx returns the frame answering a getdata entry for a mempool
// transaction, if the peer may have it: held by the mirror and added
// before the last inv the peer was sent (Core's FindTxForGetData);
// without witness for MSG_TX, with it for MSG_WITNESS_TX and MSG_WTX.
// Nil otherwise.
func (s *Server) MempoolTx(p *Peer, iv *wire.InvVect) []byte {
	if s.mempool == nil {
		return nil
	}
	var mt *mempool.Tx
	var ok bool
	switch iv.Type {
	case wire.InvTypeTx, wire.InvTypeWitnessTx:
		mt, ok = s.mempool.Get(iv.Hash)
	case msgread.InvTypeWTx:
		mt, ok = s.mempool.GetWtx(iv.Hash)
	}
	if !ok || mt.Seq > p.lastInvSeq.Load() {
		return nil
	}
	if iv.Type == wire.InvTypeTx && mt.Tx.HasWitness() {
		return txFrame(s.env.Net, mt.Tx)
	}
	return encodedFrame(s.env.Net, wire.CmdTx, mt.Raw)
}
