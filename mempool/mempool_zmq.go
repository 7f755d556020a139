package mempool

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/backoff"
	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/cfindexd/cfindexd/zmq"
)

// Mempool ZMQ tuning.
const (
	// DefaultRawTxWait is how long an "A" notification waits for its
	// rawtx before the transaction is fetched with getrawtransaction.
	DefaultRawTxWait = 250 * time.Millisecond
	// rawTxKeep is how long an unpaired rawtx is kept: those of block
	// transactions never pair.
	rawTxKeep = 30 * time.Second
	// mempoolEventBuffer is the capacity between the ZMQ readers and the
	// mirror; a full buffer holds the readers back (Core drops at its high
	// water mark, which shows as a sequence gap and a resync).
	mempoolEventBuffer = 4096
)

// zmqEvent is what a ZMQ reader hands the mirror.
type zmqEvent struct {
	connected bool // a (re)connection: anything before it may be lost
	lost      bool // the connection broke or reconnected underneath
	topic     string
	body      []byte
	seq       uint32
}

// sequenceEvent is a decoded "sequence" body: a 32-byte hash in display
// order, a label, and for A/R the 8-byte LE mempool sequence.
type sequenceEvent struct {
	hash    chainhash.Hash // internal byte order
	label   byte           // 'A', 'R', 'C' or 'D'
	mempool uint64         // A and R only
}

// parseSequence decodes a "sequence" body, rejecting any other shape.
func parseSequence(body []byte) (sequenceEvent, bool) {
	if len(body) < chainhash.HashSize+1 {
		return sequenceEvent{}, false
	}
	ev := sequenceEvent{hash: zmq.ReversedHash(body[:chainhash.HashSize]), label: body[chainhash.HashSize]}
	rest := body[chainhash.HashSize+1:]
	switch ev.label {
	case 'A', 'R':
		if len(rest) != 8 {
			return sequenceEvent{}, false
		}
		ev.mempool = binary.LittleEndian.Uint64(rest)
	case 'C', 'D':
		if len(rest) != 0 {
			return sequenceEvent{}, false
		}
	default:
		return sequenceEvent{}, false
	}
	return ev, true
}

// zmqState is the ZMQ follower's bookkeeping, owned by runZMQ.
type zmqState struct {
	needResync bool
	snapSeq    uint64 // mempool sequence of the last snapshot
	haveSnap   bool
	lastSeq    map[string]uint32
	rawByTxid  map[chainhash.Hash]pendingRaw
	rawBytes   int64
	waiting    map[chainhash.Hash]time.Time // A seen, bytes not yet
}

type pendingRaw struct {
	raw []byte
	at  time.Time
}

// runZMQ follows Core's sequence (and rawtx) notifications. On every
// (re)connection, sequence gap or timer it compares itself with a
// getrawmempool snapshot carrying the mempool sequence, and then applies
// only A/R events numbered at or after the snapshot's.
func (m *Mirror) runZMQ(ctx context.Context) error {
	events := make(chan zmqEvent, mempoolEventBuffer)
	endpoints := map[string][]string{m.cfg.ZMQSequence: {zmq.TopicSequence}}
	if m.cfg.ZMQRawTx != "" {
		endpoints[m.cfg.ZMQRawTx] = append(endpoints[m.cfg.ZMQRawTx], zmq.TopicRawTx)
	}
	var wg sync.WaitGroup
	for ep, topics := range endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.readZMQ(ctx, ep, topics, events)
		}()
	}
	defer wg.Wait()

	// The first snapshot is taken when the first connection is up (its
	// connected event), so that no notification falls between the two.
	st := &zmqState{
		lastSeq:   make(map[string]uint32),
		rawByTxid: make(map[chainhash.Hash]pendingRaw),
		waiting:   make(map[chainhash.Hash]time.Time),
	}
	resync := time.NewTicker(m.cfg.ResyncInterval)
	defer resync.Stop()
	tick := time.NewTicker(m.cfg.RawTxWait / 2)
	defer tick.Stop()
	retry := backoff.New(250*time.Millisecond, 30*time.Second, nil)
	failing := false
	for {
		if st.needResync {
			snap, err := m.resync(ctx, true)
			switch {
			case ctx.Err() != nil:
				return nil
			case err != nil:
				switch {
				case errors.Is(err, ErrNotReady):
					m.log.Debug().Err(err).Msg("mirroring the node's mempool once the node answers")
				case !failing:
					m.log.Warn().Err(err).Msg("mirroring the node's mempool failed; will keep trying")
					failing = true
				}
				if retry.Wait(ctx) != nil {
					return nil
				}
				continue
			}
			if failing {
				m.log.Info().Msg("mirroring the node's mempool works again")
				failing = false
			}
			retry.Reset()
			st.needResync = false
			st.snapSeq, st.haveSnap = snap.Sequence, snap.HasSequence
		}
		select {
		case <-ctx.Done():
			return nil
		case ev := <-events:
			m.handleZMQ(ctx, st, ev)
		case <-tick.C:
			m.fetchWaiting(ctx, st, false)
		case <-resync.C:
			st.needResync = true
		}
	}
}

// handleZMQ applies one event.
func (m *Mirror) handleZMQ(ctx context.Context, st *zmqState, ev zmqEvent) {
	switch {
	case ev.connected, ev.lost:
		clear(st.lastSeq)
		st.needResync = true
		return
	}
	if last, ok := st.lastSeq[ev.topic]; ok && ev.seq != last+1 {
		m.log.Warn().Str("topic", ev.topic).Uint32("expected", last+1).Uint32("got", ev.seq).Msg("gap in ZMQ sequence numbers; resyncing the mempool mirror")
		st.needResync = true
	}
	st.lastSeq[ev.topic] = ev.seq
	now := m.cfg.Now()
	switch ev.topic {
	case zmq.TopicRawTx:
		t, err := wirescan.ScanTx(ev.body)
		if err != nil {
			m.log.Warn().Err(err).Msg("ignoring a rawtx notification that does not decode")
			return
		}
		if _, ok := st.waiting[t.TxID]; ok {
			delete(st.waiting, t.TxID)
			m.add(t.TxID, ev.body)
			return
		}
		m.keepRaw(st, t.TxID, ev.body, now)
	case zmq.TopicSequence:
		se, ok := parseSequence(ev.body)
		if !ok {
			m.log.Warn().Int("bytes", len(ev.body)).Msg("ignoring a sequence notification of unknown shape")
			return
		}
		switch se.label {
		case 'A':
			if st.haveSnap && se.mempool < st.snapSeq {
				return // in the snapshot already
			}
			if p, ok := st.rawByTxid[se.hash]; ok {
				m.dropRaw(st, se.hash)
				m.add(se.hash, p.raw)
				return
			}
			st.waiting[se.hash] = now
			if m.cfg.ZMQRawTx == "" {
				m.fetchWaiting(ctx, st, true)
			}
		case 'R':
			if st.haveSnap && se.mempool < st.snapSeq {
				return
			}
			delete(st.waiting, se.hash)
			m.dropRaw(st, se.hash)
			m.remove([]chainhash.Hash{se.hash})
		case 'C':
			block, err := m.src.GetRawBlock(ctx, se.hash)
			if err != nil {
				m.log.Debug().Err(err).Stringer("block", se.hash).Msg("cannot fetch the connected block; resyncing the mempool mirror")
				st.needResync = true
				return
			}
			m.BlockConnected(block)
			for _, tx := range block.Transactions {
				id := tx.TxHash()
				delete(st.waiting, id)
				m.dropRaw(st, id)
			}
		case 'D':
			// Core re-adds the block's transactions with A notifications.
		}
	}
}

// keepRaw holds an unpaired rawtx, within an eighth of the mirror's bound.
func (m *Mirror) keepRaw(st *zmqState, txid chainhash.Hash, raw []byte, now time.Time) {
	if _, ok := st.rawByTxid[txid]; ok {
		return
	}
	if st.rawBytes+int64(len(raw)) > m.cfg.MaxBytes/8 {
		for id, p := range st.rawByTxid {
			if now.Sub(p.at) > rawTxKeep/10 {
				m.dropRaw(st, id)
			}
		}
		if st.rawBytes+int64(len(raw)) > m.cfg.MaxBytes/8 {
			return // fetched by txid if its A comes
		}
	}
	st.rawByTxid[txid] = pendingRaw{raw: raw, at: now}
	st.rawBytes += int64(len(raw))
}

func (m *Mirror) dropRaw(st *zmqState, txid chainhash.Hash) {
	if p, ok := st.rawByTxid[txid]; ok {
		st.rawBytes -= int64(len(p.raw))
		delete(st.rawByTxid, txid)
	}
}

// fetchWaiting fetches the transactions whose A arrived without bytes:
// all of them when now is set, else those that waited RawTxWait. It also
// expires unpaired rawtx bodies.
func (m *Mirror) fetchWaiting(ctx context.Context, st *zmqState, now bool) {
	t := m.cfg.Now()
	for id, p := range st.rawByTxid {
		if t.Sub(p.at) > rawTxKeep {
			m.dropRaw(st, id)
		}
	}
	var due []chainhash.Hash
	for id, since := range st.waiting {
		if now || t.Sub(since) >= m.cfg.RawTxWait {
			due = append(due, id)
			delete(st.waiting, id)
		}
	}
	if len(due) == 0 {
		return
	}
	if err := m.fetch(ctx, due); err != nil && ctx.Err() == nil {
		m.log.Debug().Err(err).Msg("fetching new mempool transactions failed; resyncing")
		st.needResync = true
	}
}

// readZMQ subscribes to topics on ep and forwards messages until ctx is
// done, reconnecting with backoff.
func (m *Mirror) readZMQ(ctx context.Context, ep string, topics []string, events chan<- zmqEvent) {
	log := m.log.With().Str("zmq", ep).Strs("topics", topics).Logger()
	retry := backoff.New(250*time.Millisecond, 30*time.Second, nil)
	send := func(ev zmqEvent) bool {
		select {
		case events <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	failing := false
	for {
		conn, err := zmq.Dial(ctx, ep, topics, 30*time.Second)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if !failing {
				log.Warn().Err(err).Msg("cannot subscribe to ZMQ publisher; retrying")
			}
			failing = true
			if retry.Wait(ctx) != nil {
				return
			}
			continue
		}
		failing = false
		retry.Reset()
		log.Info().Msg("subscribed to ZMQ mempool notifications")
		if !send(zmqEvent{connected: true}) {
			_ = conn.Close()
			return
		}
		stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
		for {
			parts, err := conn.Receive(nil)
			if err != nil {
				var nerr net.Error
				if errors.As(err, &nerr) && nerr.Timeout() && ctx.Err() == nil {
					log.Warn().Err(err).Msg("ZMQ connection interrupted; will resync the mempool mirror")
					if !send(zmqEvent{lost: true}) {
						break
					}
					continue
				}
				break
			}
			if len(parts) != 3 || len(parts[2]) != 4 {
				log.Warn().Int("parts", len(parts)).Msg("ignoring ZMQ message that is not topic/body/4-byte sequence")
				if !send(zmqEvent{lost: true}) {
					break
				}
				continue
			}
			if !send(zmqEvent{topic: string(parts[0]), body: parts[1], seq: binary.LittleEndian.Uint32(parts[2])}) {
				break
			}
		}
		stop()
		_ = conn.Close()
		if ctx.Err() != nil {
			return
		}
		if !send(zmqEvent{lost: true}) || retry.Wait(ctx) != nil {
			return
		}
	}
}
