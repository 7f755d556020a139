package mempool

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/zmq"
)

// fixtureMempool is the recorded Core node as the mirror's source: its
// mempool is what the replayed notifications have made it so far
// (maintained by the test), transactions and blocks come from the
// recording.
type fixtureMempool struct {
	fx *corefixture.Fixtures

	mu      sync.Mutex
	pool    []chainhash.Hash
	nextSeq uint64
	lists   int
	fetched int
}

func (f *fixtureMempool) set(pool []chainhash.Hash, nextSeq uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pool, f.nextSeq = slices.Clone(pool), nextSeq
}

func (f *fixtureMempool) GetRawMempool(_ context.Context, withSeq bool) (Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	return Snapshot{Txids: slices.Clone(f.pool), Sequence: f.nextSeq, HasSequence: withSeq}, nil
}

func (f *fixtureMempool) GetMempoolTransactions(_ context.Context, ids []chainhash.Hash) ([][]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([][]byte, len(ids))
	for i, id := range ids {
		f.fetched++
		if raw, ok := f.fx.RawTx(id); ok && slices.Contains(f.pool, id) {
			out[i] = raw
		}
	}
	return out, nil
}

func (f *fixtureMempool) GetRawBlock(_ context.Context, h chainhash.Hash) (*wire.MsgBlock, error) {
	b, ok := f.fx.BlockByHash(h)
	if !ok {
		return nil, errBlockNotFound
	}
	return b.MsgBlock()
}

// TestMempoolMirrorReplaysCoreZMQ replays Bitcoin Core v31's recorded
// "sequence" notifications — transactions entering the mempool (A), a
// full-RBF replacement (R), blocks connecting (C), an invalidateblock that
// disconnects two blocks (D) and returns their six transactions to the
// mempool (A), and the new branch mining them — through a ZMTP publisher
// to the mirror, with "rawtx" frames in Core's documented format (doc/
// zmq.md: topic, serialized transaction, 4-byte LE sequence; Core's
// capture did not subscribe to rawtx) built from the recorded
// transactions: before most A notifications, missing before every third so
// the mirror fetches those with getrawtransaction, and for every
// transaction of a connected block, which must not be mirrored. After each
// phase the mirror holds exactly the mempool the notifications describe;
// after the invalidateblock that is the six transactions Core's own
// getrawmempool listed at that moment, and at the end it is empty, as
// Core's getmempoolinfo was. Every added transaction reaches a subscriber
// within 2 s, and the mirror resyncs only once (at its start): no gap.
func TestMempoolMirrorReplaysCoreZMQ(t *testing.T) {
	fx := corefixture.Load(t)
	msgs, err := fx.ZMQCapture()
	if err != nil {
		t.Fatal(err)
	}
	recorded := recordedMempoolAfterInvalidate(t, fx)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pub := corefixture.NewPublisher(t)
	src := &fixtureMempool{fx: fx, nextSeq: 1}
	m := newTestMirror(t, src, Config{ZMQSequence: pub.Endpoint(), ZMQRawTx: pub.Endpoint(), ResyncInterval: time.Hour, RawTxWait: 20 * time.Millisecond})
	sub := m.Subscribe(1000)
	defer runMirror(ctx, t, m)()
	for _, topic := range []string{zmq.TopicSequence, zmq.TopicRawTx} {
		if err := pub.WaitSubscribed(ctx, topic, 1); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, 10*time.Second, "the mirror's first snapshot", func() bool { return m.Stats().Resyncs == 1 })

	var model []chainhash.Hash
	var rawSeq uint32
	publishRaw := func(raw []byte) {
		seq := binary.LittleEndian.AppendUint32(nil, rawSeq)
		rawSeq++
		if _, err := pub.Publish([]byte(zmq.TopicRawTx), raw, seq); err != nil {
			t.Fatal(err)
		}
	}
	type sentAt struct {
		id chainhash.Hash
		at time.Time
	}
	var added []sentAt
	checkPhase := func(phase string) {
		t.Helper()
		want := slices.Clone(model)
		slices.SortFunc(want, cmpHash)
		var held []chainhash.Hash
		waitUntil(t, 10*time.Second, "the mirror to match after "+phase, func() bool {
			held = held[:0]
			for _, tx := range m.Snapshot() {
				held = append(held, tx.Txid)
			}
			slices.SortFunc(held, cmpHash)
			return slices.Equal(held, want)
		})
		// Delivery order follows arrival: a transaction whose bytes came
		// with rawtx can overtake one fetched by txid.
		sentTimes := map[chainhash.Hash]time.Time{}
		for _, a := range added {
			sentTimes[a.id] = a.at
		}
		for range added {
			select {
			case got := <-sub.C():
				at, ok := sentTimes[got.Txid]
				if !ok {
					t.Fatalf("%s: subscriber got %s, which was not added in this phase", phase, got.Txid)
				}
				delete(sentTimes, got.Txid)
				if d := time.Since(at); d > mempoolDeadline {
					t.Errorf("%s: %s reached the subscriber after %v", phase, got.Txid, d)
				}
			case <-time.After(mempoolDeadline):
				t.Fatalf("%s: %d transactions not delivered", phase, len(sentTimes))
			}
		}
		added = added[:0]
	}
	aCount := 0
	for i, msg := range msgs {
		if msg.Topic != zmq.TopicSequence {
			continue
		}
		ev, ok := parseSequence(msg.Body)
		if !ok {
			t.Fatalf("capture line %d: sequence body %x does not parse", msg.Index, msg.Body)
		}
		switch ev.label {
		case 'A':
			model = append(model, ev.hash)
			src.set(model, ev.mempool+1)
			aCount++
			if aCount%3 != 0 {
				raw, ok := fx.RawTx(ev.hash)
				if !ok {
					t.Fatalf("recorded tx %s missing", ev.hash)
				}
				publishRaw(raw)
			}
			added = append(added, sentAt{ev.hash, time.Now()})
		case 'R':
			model = slices.DeleteFunc(model, func(h chainhash.Hash) bool { return h == ev.hash })
			src.set(model, ev.mempool+1)
		case 'C':
			b, ok := fx.BlockByHash(ev.hash)
			if !ok {
				t.Fatalf("connected block %s not recorded", ev.hash)
			}
			blk, err := b.MsgBlock()
			if err != nil {
				t.Fatal(err)
			}
			for _, tx := range blk.Transactions {
				publishRaw(rawOf(t, tx))
				id := tx.TxHash()
				model = slices.DeleteFunc(model, func(h chainhash.Hash) bool { return h == id })
			}
			src.set(model, src.nextSeq)
		}
		if _, err := pub.Publish(msg.Frames()...); err != nil {
			t.Fatal(err)
		}
		if i+1 < len(msgs) && msgs[i+1].Phase != msg.Phase {
			checkPhase(msg.Phase)
			if msg.Phase == "invalidateblock h113 (stale-a)" {
				got := slices.Clone(model)
				slices.SortFunc(got, cmpHash)
				if !slices.Equal(got, recorded) {
					t.Fatalf("after invalidateblock the mirror holds %v, Core's getrawmempool listed %v", got, recorded)
				}
			}
		}
	}
	checkPhase("the last block")
	if s := m.Stats(); s.Transactions != 0 || s.Resyncs != 1 {
		t.Fatalf("at the end: %+v (Core's mempool was empty; one resync expected)", s)
	}
	src.mu.Lock()
	fetched := src.fetched
	src.mu.Unlock()
	if fetched == 0 {
		t.Fatal("no transaction was fetched: the A-without-rawtx path was not exercised")
	}
	t.Logf("replayed %d notifications (%d A), %d transactions fetched by getrawtransaction, stats %+v", len(msgs), aCount, fetched, m.Stats())
}

func rawOf(t *testing.T, tx *wire.MsgTx) []byte {
	t.Helper()
	var buf bytesBuffer
	if err := tx.Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.b
}

func cmpHash(a, b chainhash.Hash) int { return bytes.Compare(a[:], b[:]) }

type bytesBuffer struct{ b []byte }

func (w *bytesBuffer) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

// recordedMempoolAfterInvalidate is Core's getrawmempool right after the
// invalidateblock, sorted.
func recordedMempoolAfterInvalidate(t *testing.T, fx *corefixture.Fixtures) []chainhash.Hash {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fx.Dir, "rpc", "reorg", "02b-after-invalidateblock.getrawmempool-sequence.json"))
	if err != nil {
		t.Fatal(err)
	}
	var snap struct {
		Txids []string `json:"txids"`
	}
	if err := json.Unmarshal(raw, &snap); err != nil {
		t.Fatal(err)
	}
	var out []chainhash.Hash
	for _, s := range snap.Txids {
		h, err := chainhash.NewHashFromStr(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, *h)
	}
	slices.SortFunc(out, cmpHash)
	return out
}
