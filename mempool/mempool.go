package mempool

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"
)

// Mempool mirror defaults.
const (
	// DefaultMaxBytes bounds the mirror: 64 MiB of accounted memory
	// (serialization, decoded transaction and bookkeeping) holds roughly
	// 100,000 typical transactions — a busy mainnet mempool's newest
	// third, and everything a wallet announced in the last hours.
	DefaultMaxBytes = 64 << 20
	// DefaultPollInterval is how often the mirror lists the node's mempool
	// without ZMQ (and so bounds how late a new transaction is seen).
	DefaultPollInterval = time.Second
	// DefaultResyncInterval is how often, with ZMQ, the mirror still
	// compares itself with getrawmempool, in case a notification was lost
	// without a gap in the sequence numbers (a publisher restart).
	DefaultResyncInterval = 5 * time.Minute
	// mempoolFetchBatch is the most transactions per getrawtransaction
	// batch.
	mempoolFetchBatch = 500
	// forgottenEntryCost is what remembering an evicted txid costs
	// (hash, map entry, list element).
	forgottenEntryCost = 120
)

// Source is what the mirror reads from the node: its mempool listing, the
// transactions in it (nil for each the node no longer has) and blocks.
// cmd/cfindexd adapts the node client to it.
type Source interface {
	// GetRawMempool lists the node's mempool; withSequence asks for
	// Core's mempool sequence too (asked only of Core).
	GetRawMempool(ctx context.Context, withSequence bool) (Snapshot, error)
	GetMempoolTransactions(ctx context.Context, txids []chainhash.Hash) ([][]byte, error)
	GetRawBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, error)
}

// ErrNotReady is what a Source answers while it cannot reach the node at
// all yet (at start, before the node has answered once). The mirror
// retries it without a warning: it heals as soon as the node answers, and
// a node that never does is the daemon's to report.
var ErrNotReady = errors.New("the mempool source has no node yet")

// Snapshot is the node's mempool as getrawmempool lists it.
type Snapshot struct {
	Txids []chainhash.Hash
	// Sequence is Core's mempool sequence at the snapshot (getrawmempool
	// false true): ZMQ "sequence" A/R events numbered below it are already
	// reflected. Valid only when HasSequence.
	Sequence    uint64
	HasSequence bool
}

// Config configures a Mirror.
type Config struct {
	// MaxBytes bounds the accounted memory of the transactions held;
	// DefaultMaxBytes when zero.
	MaxBytes int64
	// PollInterval is the getrawmempool period without ZMQ;
	// DefaultPollInterval when zero.
	PollInterval time.Duration
	// ZMQSequence is Core's -zmqpubsequence endpoint. When set, the mirror
	// follows the node's mempool by its "sequence" notifications (A/R for
	// transactions, C/D for blocks) instead of polling, and asks Core for
	// getrawmempool's mempool_sequence to line them up with a snapshot.
	ZMQSequence string
	// ZMQRawTx is Core's -zmqpubrawtx endpoint (it may equal ZMQSequence).
	// With it, transactions added to the mempool arrive with their bytes;
	// without it, each is fetched with getrawtransaction.
	ZMQRawTx string
	// ResyncInterval is the full comparison period with ZMQ;
	// DefaultResyncInterval when zero.
	ResyncInterval time.Duration
	// RawTxWait is how long an A notification waits for its rawtx before
	// the transaction is fetched by txid; DefaultRawTxWait when zero.
	RawTxWait time.Duration
	// Now is the clock (time.Now when nil), for tests.
	Now func() time.Time
}

// Tx is a transaction in the mirror. It is shared between
// subscribers and must not be modified.
type Tx struct {
	Txid chainhash.Hash
	// Wtxid is the witness txid (BIP-141; the txid for a transaction
	// without witness), what peers that negotiated wtxidrelay ask by.
	Wtxid chainhash.Hash
	Tx    *wire.MsgTx
	// Raw is the serialization with witness.
	Raw []byte
	// Added is when the mirror learned of it.
	Added time.Time
	// Seq numbers the transactions in the order the mirror added them
	// (from 1, never reused): a server answers getdata only for
	// transactions added before its last announcement to the peer, as
	// Core does with its mempool sequence.
	Seq  uint64
	cost int64
}

// Stats are the mirror's counters.
type Stats struct {
	Transactions int   // held
	Bytes        int64 // accounted memory of the held transactions and forgotten txids
	Added        uint64
	Removed      uint64 // left the node's mempool (mined, replaced, expired)
	Evicted      uint64 // dropped by the mirror's byte bound while still in the node's mempool
	Resyncs      uint64
}

// Mirror keeps a bounded copy of the node's mempool and tells
// subscribers about transactions as they arrive, within a poll interval
// (or, with ZMQ, as Core publishes them). It holds at most MaxBytes of
// accounted memory; when a new transaction does not fit, the transactions
// the mirror learned of first are evicted first (arrival order: the
// newest transactions are what wallets wait to hear about, the oldest the
// likeliest to have been mined or announced already), and their txids are
// remembered (at a small cost counted in the same bound) so that a poll
// does not fetch them again while the node still has them. A transaction
// larger than the whole bound is not held. Removal: a transaction leaves
// the mirror when getrawmempool no longer lists it, when Core's sequence
// topic says R, or when a block containing it connects (BlockConnected,
// or the C notification with ZMQ).
//
// Its methods are safe for concurrent use; Run must be called once.
type Mirror struct {
	src Source
	cfg Config
	log zerolog.Logger

	mu        sync.Mutex
	held      map[chainhash.Hash]*list.Element // value *MempoolTx
	byWtxid   map[chainhash.Hash]*Tx
	order     *list.List                       // arrival order, front oldest
	forgotten map[chainhash.Hash]*list.Element // evicted txids, value chainhash.Hash
	forgotOrd *list.List
	bytes     int64
	seq       uint64 // Seq of the last transaction added
	stats     Stats
	subs      map[*Subscription]struct{}
}

// NewMirror validates cfg; Run starts following the node.
func NewMirror(src Source, cfg Config, log zerolog.Logger) (*Mirror, error) {
	if cfg.MaxBytes < 0 {
		return nil, fmt.Errorf("mempool mirror: negative byte bound %d", cfg.MaxBytes)
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.ResyncInterval <= 0 {
		cfg.ResyncInterval = DefaultResyncInterval
	}
	if cfg.RawTxWait <= 0 {
		cfg.RawTxWait = DefaultRawTxWait
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ZMQRawTx != "" && cfg.ZMQSequence == "" {
		return nil, fmt.Errorf("mempool mirror: rawtx needs the sequence topic too (rawtx alone cannot tell mempool from block transactions)")
	}
	for _, ep := range []string{cfg.ZMQSequence, cfg.ZMQRawTx} {
		if ep != "" && !bytes.HasPrefix([]byte(ep), []byte("tcp://")) {
			return nil, fmt.Errorf("mempool mirror: zmq endpoint %q: only tcp://host:port is supported", ep)
		}
	}
	return &Mirror{
		src:       src,
		cfg:       cfg,
		log:       log.With().Str("component", "mempool").Logger(),
		held:      make(map[chainhash.Hash]*list.Element),
		byWtxid:   make(map[chainhash.Hash]*Tx),
		order:     list.New(),
		forgotten: make(map[chainhash.Hash]*list.Element),
		forgotOrd: list.New(),
		subs:      make(map[*Subscription]struct{}),
	}, nil
}

// txCost is the accounted memory of a held transaction: its serialization,
// the decoded wire.MsgTx (structs per input, output and witness item, and
// a copy of every script and witness item) and the index entries (by txid
// and by wtxid). A test holds it to the real heap.
func txCost(raw []byte, tx *wire.MsgTx) int64 {
	c := int64(2*len(raw)) + 480 + int64(len(tx.TxIn))*(88+24) + int64(len(tx.TxOut))*(40+8)
	for _, in := range tx.TxIn {
		c += int64(len(in.Witness)) * 24
	}
	return c
}

// Get returns the held transaction with txid.
func (m *Mirror) Get(txid chainhash.Hash) (*Tx, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.held[txid]; ok {
		return e.Value.(*Tx), true
	}
	return nil, false
}

// GetWtx returns the held transaction with wtxid.
func (m *Mirror) GetWtx(wtxid chainhash.Hash) (*Tx, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt, ok := m.byWtxid[wtxid]
	return mt, ok
}

// LastSeq is the Seq of the last transaction added (0 before the first).
func (m *Mirror) LastSeq() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seq
}

// Snapshot returns the held transactions, oldest first (what a `mempool`
// request is answered from).
func (m *Mirror) Snapshot() []*Tx {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Tx, 0, m.order.Len())
	for e := m.order.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*Tx))
	}
	return out
}

// Range returns up to max held transactions with Seq above after, oldest
// first: a mempool request is answered a chunk at a time, so that a server
// never copies the whole mirror for one peer. It walks the held
// transactions from the oldest, so a chunk costs the number of older ones.
func (m *Mirror) Range(after uint64, max int) []*Tx {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Tx
	for e := m.order.Front(); e != nil && len(out) < max; e = e.Next() {
		if mt := e.Value.(*Tx); mt.Seq > after {
			out = append(out, mt)
		}
	}
	return out
}

// Stats returns the counters.
func (m *Mirror) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	s.Transactions = m.order.Len()
	s.Bytes = m.bytes
	return s
}

// known reports whether txid is held or was evicted.
func (m *Mirror) knownLocked(txid chainhash.Hash) bool {
	_, held := m.held[txid]
	_, gone := m.forgotten[txid]
	return held || gone
}

// add decodes raw and holds it, evicting the oldest transactions to make
// room, and tells subscribers. It returns false for a transaction already
// known, one that does not decode, or one larger than the bound.
func (m *Mirror) add(txid chainhash.Hash, raw []byte) bool {
	tx := new(wire.MsgTx)
	r := bytes.NewReader(raw)
	if err := tx.Deserialize(r); err != nil || r.Len() != 0 || tx.TxHash() != txid {
		m.log.Warn().Stringer("txid", txid).Msg("node sent a transaction that does not decode to its txid; not mirrored")
		return false
	}
	mt := &Tx{Txid: txid, Wtxid: tx.WitnessHash(), Tx: tx, Raw: raw, Added: m.cfg.Now()}
	mt.cost = txCost(raw, tx)
	m.mu.Lock()
	if m.knownLocked(txid) {
		m.mu.Unlock()
		return false
	}
	if mt.cost > m.cfg.MaxBytes {
		m.rememberLocked(txid)
		m.mu.Unlock()
		return false
	}
	for m.bytes+mt.cost > m.cfg.MaxBytes && m.order.Len() > 0 {
		old := m.order.Front().Value.(*Tx)
		m.dropLocked(old.Txid)
		m.rememberLocked(old.Txid)
		m.stats.Evicted++
	}
	m.seq++
	mt.Seq = m.seq
	m.held[txid] = m.order.PushBack(mt)
	m.byWtxid[mt.Wtxid] = mt
	m.bytes += mt.cost
	m.stats.Added++
	subs := make([]*Subscription, 0, len(m.subs))
	for s := range m.subs {
		subs = append(subs, s)
	}
	m.mu.Unlock()
	for _, s := range subs {
		s.deliver(mt)
	}
	return true
}

// rememberLocked records an evicted txid, forgetting the oldest ones when
// they take more than a quarter of the bound, and keeps the total within
// the bound (a transaction dropped for that is not remembered: it may be
// fetched again by a later poll).
func (m *Mirror) rememberLocked(txid chainhash.Hash) {
	if _, ok := m.forgotten[txid]; ok {
		return
	}
	m.forgotten[txid] = m.forgotOrd.PushBack(txid)
	m.bytes += forgottenEntryCost
	for int64(m.forgotOrd.Len())*forgottenEntryCost > m.cfg.MaxBytes/4 {
		m.unrememberLocked(m.forgotOrd.Front().Value.(chainhash.Hash))
	}
	for m.bytes > m.cfg.MaxBytes && m.order.Len() > 0 {
		m.dropLocked(m.order.Front().Value.(*Tx).Txid)
		m.stats.Evicted++
	}
}

func (m *Mirror) unrememberLocked(txid chainhash.Hash) {
	if e, ok := m.forgotten[txid]; ok {
		m.forgotOrd.Remove(e)
		delete(m.forgotten, txid)
		m.bytes -= forgottenEntryCost
	}
}

// dropLocked removes a held transaction.
func (m *Mirror) dropLocked(txid chainhash.Hash) bool {
	e, ok := m.held[txid]
	if !ok {
		return false
	}
	m.order.Remove(e)
	delete(m.held, txid)
	mt := e.Value.(*Tx)
	delete(m.byWtxid, mt.Wtxid)
	m.bytes -= mt.cost
	return true
}

// remove forgets txids that left the node's mempool.
func (m *Mirror) remove(txids []chainhash.Hash) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range txids {
		if m.dropLocked(id) {
			m.stats.Removed++
		}
		m.unrememberLocked(id)
	}
}

// BlockConnected removes a connected block's transactions, for callers
// that see blocks before the mirror's next poll (the indexer).
func (m *Mirror) BlockConnected(block *wire.MsgBlock) {
	ids := make([]chainhash.Hash, len(block.Transactions))
	for i, tx := range block.Transactions {
		ids[i] = tx.TxHash()
	}
	m.remove(ids)
}

// resync compares the mirror with getrawmempool: it removes what the node
// no longer has and fetches what is new, in batches. It returns the
// snapshot's mempool sequence (Core, withSequence).
func (m *Mirror) resync(ctx context.Context, withSequence bool) (Snapshot, error) {
	snap, err := m.src.GetRawMempool(ctx, withSequence)
	if err != nil {
		return snap, fmt.Errorf("mempool resync: %w", err)
	}
	inPool := make(map[chainhash.Hash]struct{}, len(snap.Txids))
	for _, id := range snap.Txids {
		inPool[id] = struct{}{}
	}
	var gone, fresh []chainhash.Hash
	m.mu.Lock()
	m.stats.Resyncs++
	for id := range m.held {
		if _, ok := inPool[id]; !ok {
			gone = append(gone, id)
		}
	}
	for id := range m.forgotten {
		if _, ok := inPool[id]; !ok {
			gone = append(gone, id)
		}
	}
	for _, id := range snap.Txids {
		if !m.knownLocked(id) {
			fresh = append(fresh, id)
		}
	}
	m.mu.Unlock()
	m.remove(gone)
	return snap, m.fetch(ctx, fresh)
}

// fetch gets txids from the node in batches and adds those it still has.
func (m *Mirror) fetch(ctx context.Context, txids []chainhash.Hash) error {
	for len(txids) > 0 {
		n := min(len(txids), mempoolFetchBatch)
		raws, err := m.src.GetMempoolTransactions(ctx, txids[:n])
		if err != nil {
			return fmt.Errorf("mempool fetch: %w", err)
		}
		for i, raw := range raws {
			if raw != nil {
				m.add(txids[i], raw)
			}
		}
		txids = txids[n:]
	}
	return nil
}

// Run follows the node's mempool until ctx is done, then returns nil: by
// ZMQ when configured, else by polling. Node errors are logged (the first
// of a streak at warn level) and retried; they never end Run.
func (m *Mirror) Run(ctx context.Context) error {
	if m.cfg.ZMQSequence != "" {
		return m.runZMQ(ctx)
	}
	t := time.NewTicker(m.cfg.PollInterval)
	defer t.Stop()
	failing := false
	for {
		_, err := m.resync(ctx, false)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrNotReady):
			m.log.Debug().Err(err).Msg("mirroring the node's mempool once the node answers")
		case err != nil && !failing:
			m.log.Warn().Err(err).Msg("mirroring the node's mempool failed; will keep trying")
			failing = true
		case err != nil:
			m.log.Debug().Err(err).Msg("mirroring the node's mempool failed")
		case failing:
			m.log.Info().Msg("mirroring the node's mempool works again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
