package mempool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"
)

// fakeMempool is a node whose mempool the test sets, counting fetches.
type fakeMempool struct {
	mu      sync.Mutex
	pool    map[chainhash.Hash][]byte
	order   []chainhash.Hash
	seq     uint64
	fetched map[chainhash.Hash]int
	blocks  map[chainhash.Hash]*wire.MsgBlock
	listErr error
}

func newFakeMempool() *fakeMempool {
	return &fakeMempool{pool: map[chainhash.Hash][]byte{}, fetched: map[chainhash.Hash]int{}, blocks: map[chainhash.Hash]*wire.MsgBlock{}}
}

func (f *fakeMempool) put(raw []byte, id chainhash.Hash) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.pool[id]; !ok {
		f.order = append(f.order, id)
	}
	f.pool[id] = raw
}

func (f *fakeMempool) drop(id chainhash.Hash) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pool, id)
	f.order = slices.DeleteFunc(f.order, func(h chainhash.Hash) bool { return h == id })
}

func (f *fakeMempool) GetRawMempool(_ context.Context, withSeq bool) (Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return Snapshot{}, f.listErr
	}
	return Snapshot{Txids: slices.Clone(f.order), Sequence: f.seq, HasSequence: withSeq}, nil
}

func (f *fakeMempool) GetMempoolTransactions(_ context.Context, ids []chainhash.Hash) ([][]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([][]byte, len(ids))
	for i, id := range ids {
		f.fetched[id]++
		out[i] = f.pool[id]
	}
	return out, nil
}

func (f *fakeMempool) GetRawBlock(_ context.Context, h chainhash.Hash) (*wire.MsgBlock, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.blocks[h]
	if !ok {
		return nil, errBlockNotFound
	}
	return b, nil
}

// randomMempoolTx is a segwit transaction of 1–4 inputs and 1–4 outputs.
func randomMempoolTx(rng *rand.Rand) ([]byte, chainhash.Hash) {
	tx := wire.NewMsgTx(2)
	for range 1 + rng.IntN(4) {
		var h chainhash.Hash
		for i := range h {
			h[i] = byte(rng.Uint32())
		}
		in := wire.NewTxIn(&wire.OutPoint{Hash: h, Index: rng.Uint32N(4)}, nil, nil)
		in.Witness = wire.TxWitness{make([]byte, 71), make([]byte, 33)}
		tx.AddTxIn(in)
	}
	for range 1 + rng.IntN(4) {
		script := make([]byte, 22)
		script[1] = 20
		for i := 2; i < len(script); i++ {
			script[i] = byte(rng.Uint32())
		}
		tx.AddTxOut(wire.NewTxOut(int64(rng.IntN(1e8)), script))
	}
	var buf bytes.Buffer
	_ = tx.Serialize(&buf)
	return buf.Bytes(), tx.TxHash()
}

func newTestMirror(t *testing.T, src Source, cfg Config) *Mirror {
	t.Helper()
	m, err := NewMirror(src, cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// runMirror runs m until ctx ends or the function it returns is called,
// which waits for Run to return and fails the test if it returned an
// error: defer runMirror(ctx, t, m)().
func runMirror(ctx context.Context, t *testing.T, m *Mirror) (stop func()) {
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// The mirror holds at most MaxBytes, evicts in arrival order, does not
// fetch an evicted transaction again while the node still has it, and
// forgets what leaves the node's mempool.
func TestMempoolMirrorBoundAndEvictionOrder(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 1))
	node := newFakeMempool()
	const bound = 80_000
	m := newTestMirror(t, node, Config{MaxBytes: bound})
	var ids []chainhash.Hash
	for round := range 10 {
		for range 10 {
			raw, id := randomMempoolTx(rng)
			node.put(raw, id)
			ids = append(ids, id)
		}
		if _, err := m.resync(ctx, false); err != nil {
			t.Fatal(err)
		}
		if s := m.Stats(); s.Bytes > bound {
			t.Fatalf("round %d: %d bytes held, bound %d", round, s.Bytes, bound)
		}
	}
	s := m.Stats()
	if s.Evicted == 0 || s.Transactions == 0 {
		t.Fatalf("stats %+v: the bound did not bite", s)
	}
	// What is held is a suffix of the arrival order.
	snap := m.Snapshot()
	first := slices.Index(ids, snap[0].Txid)
	for i, tx := range snap {
		if tx.Txid != ids[first+i] {
			t.Fatalf("held %d is %s, want %s (arrival order)", i, tx.Txid, ids[first+i])
		}
	}
	// Another poll fetches nothing again.
	if _, err := m.resync(ctx, false); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if n := node.fetched[id]; n != 1 {
			t.Fatalf("tx %s fetched %d times", id, n)
		}
	}
	// Everything leaves the node: the mirror is empty, remembers nothing.
	for _, id := range ids {
		node.drop(id)
	}
	if _, err := m.resync(ctx, false); err != nil {
		t.Fatal(err)
	}
	if s := m.Stats(); s.Transactions != 0 || s.Bytes != 0 || len(m.forgotten) != 0 {
		t.Fatalf("after the node emptied its mempool: %+v, %d remembered", s, len(m.forgotten))
	}
	// A transaction larger than the bound is not held.
	small := newTestMirror(t, node, Config{MaxBytes: 300})
	raw, id := randomMempoolTx(rng)
	if small.add(id, raw) || small.Stats().Bytes > 300 {
		t.Fatalf("a transaction over the bound was held: %+v", small.Stats())
	}
}

// Subscribers get every new transaction; a slow one loses transactions
// (counted) without holding the mirror back; Close ends delivery.
func TestMempoolMirrorSubscribers(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	m := newTestMirror(t, newFakeMempool(), Config{})
	fast, slow := m.Subscribe(100), m.Subscribe(2)
	for range 10 {
		raw, id := randomMempoolTx(rng)
		if !m.add(id, raw) {
			t.Fatal("add refused a new transaction")
		}
	}
	if len(fast.C()) != 10 || len(slow.C()) != 2 || slow.Dropped() != 8 {
		t.Fatalf("fast got %d, slow got %d and dropped %d", len(fast.C()), len(slow.C()), slow.Dropped())
	}
	slow.Close()
	raw, id := randomMempoolTx(rng)
	m.add(id, raw)
	if len(fast.C()) != 11 {
		t.Fatal("fast subscriber missed a transaction")
	}
	for range slow.C() {
	}
	fast.Close()
	fast.Close() // idempotent
}

// The accounted cost of held transactions is not below what they really
// take on the heap (so MaxBytes bounds memory), nor wildly above it.
func TestMempoolCostHeldToHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const n = 4000
	raws := make([][]byte, n)
	ids := make([]chainhash.Hash, n)
	for i := range raws {
		raws[i], ids[i] = randomMempoolTx(rng)
	}
	m := newTestMirror(t, newFakeMempool(), Config{MaxBytes: 1 << 30})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range raws {
		// The raw bytes are copies, as GetMempoolTransactions returns.
		m.add(ids[i], bytes.Clone(raws[i]))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	real := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	accounted := m.Stats().Bytes
	t.Logf("%d transactions: %d bytes on the heap, %d accounted (%.2f)", n, real, accounted, float64(accounted)/float64(real))
	if real > accounted || accounted > 2*real {
		t.Fatalf("accounted %d bytes for %d on the heap", accounted, real)
	}
	runtime.KeepAlive(raws)
}

// A node error is retried and never ends Run.
func TestMempoolMirrorSurvivesNodeErrors(t *testing.T) {
	node := newFakeMempool()
	node.listErr = errors.New("connection refused")
	m := newTestMirror(t, node, Config{PollInterval: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	time.Sleep(30 * time.Millisecond)
	node.mu.Lock()
	node.listErr = nil
	node.mu.Unlock()
	raw, id := randomMempoolTx(rand.New(rand.NewPCG(4, 4)))
	node.put(raw, id)
	waitUntil(t, 10*time.Second, "the transaction mirrored after errors", func() bool { _, ok := m.Get(id); return ok })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestParseSequence(t *testing.T) {
	h := make([]byte, 32)
	h[0] = 0xaa // display order: the last byte of the internal hash
	for _, tc := range []struct {
		body []byte
		ok   bool
		want sequenceEvent
	}{
		{append(append(slices.Clone(h), 'A'), 1, 0, 0, 0, 0, 0, 0, 0), true, sequenceEvent{label: 'A', mempool: 1}},
		{append(append(slices.Clone(h), 'R'), 0, 1, 0, 0, 0, 0, 0, 0), true, sequenceEvent{label: 'R', mempool: 256}},
		{append(slices.Clone(h), 'C'), true, sequenceEvent{label: 'C'}},
		{append(slices.Clone(h), 'D'), true, sequenceEvent{label: 'D'}},
		{append(slices.Clone(h), 'A'), false, sequenceEvent{}},
		{append(append(slices.Clone(h), 'C'), 0), false, sequenceEvent{}},
		{append(slices.Clone(h), 'X'), false, sequenceEvent{}},
		{h[:31], false, sequenceEvent{}},
	} {
		got, ok := parseSequence(tc.body)
		if ok != tc.ok {
			t.Errorf("%x: ok %v", tc.body, ok)
			continue
		}
		if ok {
			tc.want.hash[31] = 0xaa
			if got != tc.want {
				t.Errorf("%x: %+v, want %+v", tc.body, got, tc.want)
			}
		}
	}
	_ = fmt.Sprint
}

// A source that has no node yet (the daemon's state for the first moments
// after start) is waited for without a warning: only a failure of a
// source that can reach the node is one.
func TestMirrorWaitsForNotReadySourceQuietly(t *testing.T) {
	src := newFakeMempool()
	src.listErr = fmt.Errorf("wrapped: %w", ErrNotReady)
	raw, id := randomMempoolTx(rand.New(rand.NewPCG(3, 3)))
	src.put(raw, id)
	var logs bytes.Buffer
	m, err := NewMirror(src, Config{PollInterval: 5 * time.Millisecond}, zerolog.New(&syncWriter{w: &logs}).Level(zerolog.InfoLevel))
	if err != nil {
		t.Fatal(err)
	}
	defer runMirror(context.Background(), t, m)()
	time.Sleep(30 * time.Millisecond)
	src.mu.Lock()
	src.listErr = nil
	src.mu.Unlock()
	waitUntil(t, 5*time.Second, "the mirror to hold the transaction", func() bool { _, ok := m.Get(id); return ok })
	if s := logs.String(); s != "" {
		t.Fatalf("logged at info or above while the source was not ready: %s", s)
	}
}

// syncWriter serialises writes from the mirror's goroutine.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}
