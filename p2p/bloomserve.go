package p2p

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
	"github.com/cfindexd/cfindexd/wireframe"
)

// Refusal reasons of BloomMetrics.BloomFilterRefused.
const (
	refusedTooNoisy   = "too_noisy"
	refusedTooPrecise = "too_precise"
	refusedUpdateRate = "update_rate"
)

// BloomRefusalReasons lists the reasons BloomMetrics.BloomFilterRefused
// reports: a filter matching nearly everything (Bloom.MaxFPR), one too
// precise for the privacy floor (Bloom.MinFPR), and filter updates over
// the allowed rate.
func BloomRefusalReasons() []string {
	return []string{refusedTooNoisy, refusedTooPrecise, refusedUpdateRate}
}

// BloomMetrics receives BIP-37 counters. A Config.Metrics that implements
// it gets them; one that does not misses only these.
type BloomMetrics interface {
	// BloomPeers reports the peers with a filter loaded.
	BloomPeers(n int)
	// BloomFilterRefused counts a filterload or filteradd refused by
	// policy (its peer disconnected without penalty), by reason (one of
	// BloomRefusalReasons).
	BloomFilterRefused(reason string)
	// FilteredBlockServed counts a merkleblock sent and the transactions
	// that followed it.
	FilteredBlockServed(matchedTxs int)
	// MempoolTxsAnnounced counts transactions announced (inv) to BIP-37
	// peers, in answer to mempool or as they arrived.
	MempoolTxsAnnounced(n int)
	// BloomWork counts CPU time spent on BIP-37 work (decoding blocks,
	// hashing txids, matching).
	BloomWork(d time.Duration)
}

// nopBloomMetrics discards everything.
type nopBloomMetrics struct{}

func (nopBloomMetrics) BloomPeers(int)            {}
func (nopBloomMetrics) BloomFilterRefused(string) {}
func (nopBloomMetrics) FilteredBlockServed(int)   {}
func (nopBloomMetrics) MempoolTxsAnnounced(int)   {}
func (nopBloomMetrics) BloomWork(time.Duration)   {}

// bloomServer is what BIP-37 serving shares across peers.
type bloomServer struct {
	cfg     BloomConfig
	meter   *peerpolicy.WorkMeter
	blocks  *decodedCache // nil without a BlockFetcher
	mempool Mempool       // nil: nothing to announce
	metrics BloomMetrics
	// loaded counts peers with a filter loaded.
	loaded atomic.Int64
}

func newBloomServer(cfg BloomConfig, proxy *blockProxy, m Metrics, now func() time.Time) *bloomServer {
	bs := &bloomServer{
		cfg:     cfg,
		meter:   peerpolicy.NewWorkMeter(cfg.CPUShare, runtime.GOMAXPROCS(0), now),
		mempool: cfg.Mempool,
		metrics: nopBloomMetrics{},
	}
	if bm, ok := m.(BloomMetrics); ok {
		bs.metrics = bm
	}
	if proxy != nil {
		bs.blocks = newDecodedCache(proxy, cfg.FilteredBlockCacheBytes)
	}
	return bs
}

// checkFPR applies the policy on a filter's estimated false-positive
// rate; the refusal is an invalid request (disconnect without penalty).
func (bs *bloomServer) checkFPR(f *bloom.Filter, cmd string) error {
	fpr := f.EstimatedFPR()
	switch {
	case fpr > bs.cfg.MaxFPR:
		bs.metrics.BloomFilterRefused(refusedTooNoisy)
		return invalidRequest("%s: filter matches nearly everything (estimated false-positive rate %.3g above %.3g)", cmd, fpr, bs.cfg.MaxFPR)
	case fpr < bs.cfg.MinFPR:
		bs.metrics.BloomFilterRefused(refusedTooPrecise)
		return invalidRequest("%s: filter too precise for the privacy floor (estimated false-positive rate %.3g below %.3g)", cmd, fpr, bs.cfg.MinFPR)
	}
	return nil
}

// bloomPeer is one peer's BIP-37 state. The filter and relay flag are
// guarded by mu: the reader loads and matches blocks against the filter,
// the announcer matches new mempool transactions, and matching updates the
// filter (BLOOM_UPDATE_ALL, P2PUBKEY_ONLY). The rest is the reader's,
// except the atomics the announcer reads.
type bloomPeer struct {
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

	// Reader-owned: the update budget (tokens, blocks credited, the tip
	// height when the peer connected), filtered blocks served, and the
	// getblocks continuation block (Core's m_continuation_block).
	updates      float64
	credited     uint64
	startTip     uint32
	served       uint64
	continuation chainhash.Hash
}

func newBloomPeer(allowance int) *bloomPeer {
	return &bloomPeer{wake: make(chan struct{}, 1), updates: float64(allowance)}
}

// signal wakes the announcer.
func (bp *bloomPeer) signal() {
	select {
	case bp.wake <- struct{}{}:
	default:
	}
}

// relaying reports whether transactions are announced to the peer.
func (bp *bloomPeer) relaying() bool {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	return bp.relay && bp.filter != nil
}

// takeUpdate spends one filter update, crediting first one per
// cfg.UpdateBlocks blocks since the last call (the larger of the chain's
// growth since the peer connected and the filtered blocks it was served),
// up to cfg.UpdateAllowance. False: over the rate.
func (bp *bloomPeer) takeUpdate(env *handlerEnv) bool {
	cfg := env.bloom.cfg
	blocks := bp.served
	if tip, ok := env.view.Tip(); ok && tip.Height > bp.startTip {
		blocks = max(blocks, uint64(tip.Height-bp.startTip))
	}
	if blocks > bp.credited {
		bp.updates = min(float64(cfg.UpdateAllowance), bp.updates+float64(blocks-bp.credited)/float64(cfg.UpdateBlocks))
		bp.credited = blocks
	}
	if bp.updates < 1 {
		return false
	}
	bp.updates--
	return true
}

// setFilter replaces the peer's filter (nil clears it) and turns relay on,
// as Core's filterload and filterclear do.
func (env *handlerEnv) setFilter(bp *bloomPeer, f *bloom.Filter) {
	bp.mu.Lock()
	had := bp.filter != nil
	bp.filter = f
	bp.relay = true
	bp.mu.Unlock()
	switch {
	case !had && f != nil:
		env.bloom.metrics.BloomPeers(int(env.bloom.loaded.Add(1)))
	case had && f == nil:
		env.bloom.metrics.BloomPeers(int(env.bloom.loaded.Add(-1)))
	}
	bp.signal()
}

// dropPeer forgets a disconnected peer's filter for the gauge.
func (env *handlerEnv) dropBloomPeer(bp *bloomPeer) {
	bp.mu.Lock()
	had := bp.filter != nil
	bp.filter = nil
	bp.mu.Unlock()
	if had {
		env.bloom.metrics.BloomPeers(int(env.bloom.loaded.Add(-1)))
	}
}

// handleFilterLoad is Core's FILTERLOAD: a filter over Core's limits (36,000
// bytes, 50 hash functions) is misbehaviour ("too-large bloom filter");
// then this server's policy (updates over the rate, the estimated
// false-positive rate outside [MinFPR, MaxFPR]) refuses it as an invalid
// request. An accepted filter replaces the old one and turns relay on.
func handleFilterLoad(env *handlerEnv, st *peerState, m *wire.MsgFilterLoad) error {
	bp := st.bloom
	f, err := bloom.Load(m)
	if err != nil {
		return misbehaving("too-large bloom filter: %v", err)
	}
	if !bp.takeUpdate(env) {
		env.bloom.metrics.BloomFilterRefused(refusedUpdateRate)
		return invalidRequest("filterload: more than %d filter updates, then one per %d blocks", env.bloom.cfg.UpdateAllowance, env.bloom.cfg.UpdateBlocks)
	}
	if err := env.bloom.checkFPR(f, m.Command()); err != nil {
		return err
	}
	env.setFilter(bp, f)
	return nil
}

// handleFilterAdd is Core's FILTERADD: an element over 520 bytes, or no
// filter loaded, is misbehaviour ("bad filteradd message"); then the
// update rate, and the filter's estimated false-positive rate after the
// insert, as for filterload.
func handleFilterAdd(env *handlerEnv, st *peerState, m *wire.MsgFilterAdd) error {
	bp := st.bloom
	if len(m.Data) > bloom.MaxFilterAddSize {
		return misbehaving("bad filteradd message: element of %d bytes", len(m.Data))
	}
	bp.mu.Lock()
	loaded := bp.filter != nil
	bp.mu.Unlock()
	if !loaded {
		return misbehaving("bad filteradd message: no filter loaded")
	}
	if !bp.takeUpdate(env) {
		env.bloom.metrics.BloomFilterRefused(refusedUpdateRate)
		return invalidRequest("filteradd: more than %d filter updates, then one per %d blocks", env.bloom.cfg.UpdateAllowance, env.bloom.cfg.UpdateBlocks)
	}
	bp.mu.Lock()
	err := bp.filter.FilterAdd(m.Data)
	if err == nil {
		err = env.bloom.checkFPR(bp.filter, m.Command())
	}
	bp.mu.Unlock()
	if err != nil {
		return err
	}
	bp.signal()
	return nil
}

// handleFilterClear is Core's FILTERCLEAR: the filter is dropped and relay
// turned on. (Core then relays every transaction to the peer; this server
// is not a relay node and announces nothing to a peer without a filter.)
func handleFilterClear(env *handlerEnv, st *peerState) error {
	env.setFilter(st.bloom, nil)
	return nil
}

// bloomNotServed is the reaction to a BIP-37 message when serving is off.
func bloomNotServed(cmd string) error {
	return invalidRequest("%s is not served (no NODE_BLOOM)", cmd)
}

// encodedFrame returns a complete frame of cmd carrying payload.
func encodedFrame(net wire.BitcoinNet, cmd string, payload []byte) []byte {
	frame := make([]byte, wireframe.HeaderSize+len(payload))
	wireframe.PutHeader(frame, net, cmd, len(payload), wireframe.PayloadChecksum(payload))
	copy(frame[wireframe.HeaderSize:], payload)
	return frame
}

// startBloom readies the peer's BIP-37 state once the handshake is done:
// the tip the update budget counts the chain's growth from, and the
// announcement type (wtxidrelay).
func (p *peer) startBloom() {
	bp := p.st.bloom
	if tip, ok := p.srv.cfg.View.Tip(); ok {
		bp.startTip = tip.Height
	}
	bp.wtxidRelay = p.st.wtxidRelay
}
