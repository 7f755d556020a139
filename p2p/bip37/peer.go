package bip37

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/p2p/blockproxy"
	"github.com/cfindexd/cfindexd/p2p/msgread"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
)

// Peer is one peer's BIP-37 state. The filter and relay flag are guarded
// by mu: the reader loads and matches blocks against the filter, the
// announcer matches new mempool transactions, and matching updates the
// filter (BLOOM_UPDATE_ALL, P2PUBKEY_ONLY). The rest is the reader's,
// except the atomics the announcer reads.
type Peer struct {
	mu sync.Mutex
	// filter is the loaded filter; nil before filterload and after
	// filterclear.
	filter *bloom.Filter
	// relay is Core's m_relay_txs: the version message's relay flag,
	// turned on by filterload and filterclear. Transactions are announced
	// to a peer with relay on and a filter loaded.
	relay bool

	// wake tells the announcer that the filter changed or mempool was
	// asked for.
	wake chan struct{}
	// mempoolAsked: a mempool request awaits its answer.
	mempoolAsked atomic.Bool
	// lastInvSeq is the mempool sequence (mempool.Tx.Seq) up to
	// which transactions were in the mempool when the peer was last sent
	// an inv: getdata is answered for those only (Core's
	// m_last_inv_sequence), so a peer cannot probe the mempool for
	// transactions it was not told of.
	lastInvSeq atomic.Uint64
	// wtxidRelay: announce by wtxid (MSG_WTX), BIP-339.
	wtxidRelay bool
	// requester names the peer at the node-fetch gate, which takes turns
	// between requesters, for the blocks its filtered blocks need.
	requester blockproxy.Requester
	// work is the peer's account in the server's CPU meter.
	work *peerpolicy.WorkShare

	// Reader-owned: the update budget (tokens, blocks credited, the tip
	// height when the peer connected), filtered blocks served, and the
	// getblocks continuation block (Core's m_continuation_block).
	updates      float64
	credited     uint64
	startTip     uint32
	served       uint64
	continuation chainhash.Hash
}

// NewPeer returns the state of a fresh peer, whose block fetches wait for
// r's turn at the node-fetch gate.
func (s *Server) NewPeer(r blockproxy.Requester) *Peer {
	return &Peer{wake: make(chan struct{}, 1), updates: float64(s.cfg.UpdateAllowance), requester: r, work: s.meter.NewShare()}
}

// Start readies the peer's state once the handshake is done: the tip
// height the update budget counts the chain's growth from, and the
// announcement type (wtxidrelay).
func (p *Peer) Start(tipHeight uint32, wtxidRelay bool) {
	p.startTip = tipHeight
	p.wtxidRelay = wtxidRelay
}

// SetRelay sets the version message's relay flag (Core's m_relay_txs =
// fRelay).
func (p *Peer) SetRelay(relay bool) {
	p.mu.Lock()
	p.relay = relay
	p.mu.Unlock()
}

// signal wakes the announcer.
func (p *Peer) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// relaying reports whether transactions are announced to the peer.
func (p *Peer) relaying() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.relay && p.filter != nil
}

// Loaded reports whether the peer has a filter loaded.
func (p *Peer) Loaded() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.filter != nil
}

// AskMempool has the announcer answer a mempool request at its next turn.
func (p *Peer) AskMempool() {
	p.mempoolAsked.Store(true)
	p.signal()
}

// SetContinuation makes hash the peer's continuation block: when the peer
// asks for it, it is to be sent an inv of the tip (TakeContinuation).
func (p *Peer) SetContinuation(hash chainhash.Hash) { p.continuation = hash }

// TakeContinuation reports whether hash is the peer's continuation block,
// and forgets it if so.
func (p *Peer) TakeContinuation(hash chainhash.Hash) bool {
	if p.continuation == (chainhash.Hash{}) || hash != p.continuation {
		return false
	}
	p.continuation = chainhash.Hash{}
	return true
}

// takeUpdate spends one filter update, crediting first one per
// cfg.UpdateBlocks blocks since the last call (the larger of the chain's
// growth since the peer connected, to tipHeight, and the filtered blocks
// it was served), up to cfg.UpdateAllowance. False: over the rate.
func (s *Server) takeUpdate(p *Peer, tipHeight uint32) bool {
	blocks := p.served
	if tipHeight > p.startTip {
		blocks = max(blocks, uint64(tipHeight-p.startTip))
	}
	if blocks > p.credited {
		p.updates = min(float64(s.cfg.UpdateAllowance), p.updates+float64(blocks-p.credited)/float64(s.cfg.UpdateBlocks))
		p.credited = blocks
	}
	if p.updates < 1 {
		return false
	}
	p.updates--
	return true
}

// setFilter replaces the peer's filter (nil clears it) and turns relay on,
// as Core's filterload and filterclear do.
func (s *Server) setFilter(p *Peer, f *bloom.Filter) {
	p.mu.Lock()
	had := p.filter != nil
	p.filter = f
	p.relay = true
	p.mu.Unlock()
	switch {
	case !had && f != nil:
		s.metrics.BloomPeers(int(s.loaded.Add(1)))
	case had && f == nil:
		s.metrics.BloomPeers(int(s.loaded.Add(-1)))
	}
	p.signal()
}

// DropPeer forgets a disconnected peer's filter for the gauge.
func (s *Server) DropPeer(p *Peer) {
	p.mu.Lock()
	had := p.filter != nil
	p.filter = nil
	p.mu.Unlock()
	if had {
		s.metrics.BloomPeers(int(s.loaded.Add(-1)))
	}
}

// misbehaving returns an error wrapping msgread.ErrMisbehaving.
func misbehaving(format string, args ...any) error {
	return fmt.Errorf("%w: %s", msgread.ErrMisbehaving, fmt.Sprintf(format, args...))
}

// FilterLoad is Core's FILTERLOAD: a filter over Core's limits (36,000
// bytes, 50 hash functions) is misbehaviour ("too-large bloom filter");
// then this server's policy (updates over the rate, the estimated
// false-positive rate outside [MinFPR, MaxFPR]) refuses it as an invalid
// request. An accepted filter replaces the old one and turns relay on.
// tipHeight is the committed tip's.
func (s *Server) FilterLoad(p *Peer, m *wire.MsgFilterLoad, tipHeight uint32) error {
	f, err := bloom.Load(m)
	if err != nil {
		return misbehaving("too-large bloom filter: %v", err)
	}
	if !s.takeUpdate(p, tipHeight) {
		s.metrics.BloomFilterRefused(refusedUpdateRate)
		return invalidRequest("filterload: more than %d filter updates, then one per %d blocks", s.cfg.UpdateAllowance, s.cfg.UpdateBlocks)
	}
	if err := s.checkFPR(f, m.Command()); err != nil {
		return err
	}
	s.setFilter(p, f)
	return nil
}

// FilterAdd is Core's FILTERADD: an element over 520 bytes, or no filter
// loaded, is misbehaviour ("bad filteradd message"); then the update
// rate, and the filter's estimated false-positive rate after the insert,
// as for filterload.
func (s *Server) FilterAdd(p *Peer, m *wire.MsgFilterAdd, tipHeight uint32) error {
	if len(m.Data) > bloom.MaxFilterAddSize {
		return misbehaving("bad filteradd message: element of %d bytes", len(m.Data))
	}
	if !p.Loaded() {
		return misbehaving("bad filteradd message: no filter loaded")
	}
	if !s.takeUpdate(p, tipHeight) {
		s.metrics.BloomFilterRefused(refusedUpdateRate)
		return invalidRequest("filteradd: more than %d filter updates, then one per %d blocks", s.cfg.UpdateAllowance, s.cfg.UpdateBlocks)
	}
	p.mu.Lock()
	err := p.filter.FilterAdd(m.Data)
	if err == nil {
		err = s.checkFPR(p.filter, m.Command())
	}
	p.mu.Unlock()
	if err != nil {
		return err
	}
	p.signal()
	return nil
}

// FilterClear is Core's FILTERCLEAR: the filter is dropped and relay
// turned on. (Core then relays every transaction to the peer; this server
// is not a relay node and announces nothing to a peer without a filter.)
func (s *Server) FilterClear(p *Peer) { s.setFilter(p, nil) }
