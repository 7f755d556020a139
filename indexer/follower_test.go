package indexer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/v2/gcs/builder"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/store"
)

// fakeChain is an in-memory node: a block tree with one active chain, whose
// blocks spend outputs of earlier blocks so prevout scripts matter.
type fakeChain struct {
	mu      sync.Mutex
	rng     *rand.Rand
	blocks  map[chainhash.Hash]*wire.MsgBlock
	prevs   map[chainhash.Hash][][]byte
	active  []chainhash.Hash
	fail    error // when set, every call fails with it
	calls   int
	outputs map[wire.OutPoint][]byte
	bits    uint32 // of new blocks; 0 means regtest's 0x207fffff
}

func newFakeChain(seed uint64) *fakeChain {
	c := &fakeChain{
		rng:     rand.New(rand.NewPCG(seed, 1)),
		blocks:  map[chainhash.Hash]*wire.MsgBlock{},
		prevs:   map[chainhash.Hash][][]byte{},
		outputs: map[wire.OutPoint][]byte{},
	}
	c.extendFrom(chainhash.Hash{}, 1) // genesis
	return c
}

func (c *fakeChain) genesis() chainhash.Hash { return c.active[0] }

func (c *fakeChain) randScript() []byte {
	switch c.rng.IntN(10) {
	case 0:
		return nil // empty scripts are not elements
	case 1:
		return []byte{0x6a, 0x04, 1, 2, 3, 4} // OP_RETURN
	default:
		s := make([]byte, 22+c.rng.IntN(13))
		for i := range s {
			s[i] = byte(c.rng.Uint32())
		}
		return s
	}
}

// extendFrom mines n blocks on top of parent (zero hash: genesis) and makes
// them the active chain.
func (c *fakeChain) extendFrom(parent chainhash.Hash, n int) []chainhash.Hash {
	height := 0
	if parent != (chainhash.Hash{}) {
		for i, h := range c.active {
			if h == parent {
				height = i + 1
			}
		}
		c.active = c.active[:height]
	}
	var made []chainhash.Hash
	for range n {
		blk := &wire.MsgBlock{Header: wire.BlockHeader{
			Version: 1, PrevBlock: parent, Timestamp: time.Unix(1600000000+int64(height)*600, 0),
			Bits: cmp.Or(c.bits, 0x207fffff), Nonce: c.rng.Uint32(),
		}}
		cb := wire.NewMsgTx(1)
		cb.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: wire.MaxPrevOutIndex}, SignatureScript: []byte{byte(height), byte(height >> 8), 1}})
		cb.AddTxOut(&wire.TxOut{Value: 50, PkScript: c.randScript()})
		blk.AddTransaction(cb)
		var prevScripts [][]byte
		// Spend some known outputs (from any branch: the fake does not
		// enforce validity, only the indexer's bookkeeping matters).
		for range c.rng.IntN(4) {
			tx := wire.NewMsgTx(2)
			for op, script := range c.outputs {
				tx.AddTxIn(&wire.TxIn{PreviousOutPoint: op})
				prevScripts = append(prevScripts, script)
				delete(c.outputs, op)
				break
			}
			for range 1 + c.rng.IntN(3) {
				tx.AddTxOut(&wire.TxOut{Value: 1, PkScript: c.randScript()})
			}
			blk.AddTransaction(tx)
		}
		for _, tx := range blk.Transactions {
			for i, out := range tx.TxOut {
				c.outputs[wire.OutPoint{Hash: tx.TxHash(), Index: uint32(i)}] = out.PkScript
			}
		}
		cbHash := blk.Transactions[0].TxHash()
		blk.Header.MerkleRoot = chainhash.DoubleHashH(cbHash[:])
		h := blk.BlockHash()
		c.blocks[h] = blk
		c.prevs[h] = prevScripts
		c.active = append(c.active, h)
		made = append(made, h)
		parent = h
		height++
	}
	return made
}

func (c *fakeChain) mine(n int) []chainhash.Hash {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.extendFrom(c.active[len(c.active)-1], n)
}

// reorg replaces the top depth blocks with depth+1 new ones.
func (c *fakeChain) reorg(depth int) (stale []chainhash.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	stale = append(stale, c.active[len(c.active)-depth:]...)
	c.extendFrom(c.active[len(c.active)-depth-1], depth+1)
	return stale
}

func (c *fakeChain) setFail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fail = err
}

func (c *fakeChain) GetBestBlockHash(context.Context) (chainhash.Hash, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.fail != nil {
		return chainhash.Hash{}, c.fail
	}
	return c.active[len(c.active)-1], nil
}

func (c *fakeChain) GetBlockHash(_ context.Context, height int64) (chainhash.Hash, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.fail != nil {
		return chainhash.Hash{}, c.fail
	}
	if height < 0 || height >= int64(len(c.active)) {
		return chainhash.Hash{}, fmt.Errorf("height %d out of range", height)
	}
	return c.active[height], nil
}

func (c *fakeChain) GetBlockHeaderVerbose(_ context.Context, hash chainhash.Hash) (nodeclient.HeaderInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return nodeclient.HeaderInfo{}, c.fail
	}
	for i, h := range c.active {
		if h == hash {
			hdr := c.blocks[h].Header
			return nodeclient.HeaderInfo{Hash: h, Height: uint32(i), PrevHash: hdr.PrevBlock, Time: hdr.Timestamp}, nil
		}
	}
	return nodeclient.HeaderInfo{}, fmt.Errorf("block %s not on active chain", hash)
}

func (c *fakeChain) FetchBlock(_ context.Context, hash chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return nil, nil, c.fail
	}
	b, ok := c.blocks[hash]
	if !ok {
		return nil, nil, fmt.Errorf("no block %s", hash)
	}
	return b, c.prevs[hash], nil
}

// oracle computes a block's filter and header with btcutil's builder.
func (c *fakeChain) oracle(t *testing.T, hash chainhash.Hash, prev chainhash.Hash) ([]byte, chainhash.Hash) {
	t.Helper()
	f, err := builder.BuildBasicFilter(c.blocks[hash], c.prevs[hash])
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.NBytes()
	if err != nil {
		t.Fatal(err)
	}
	h, err := builder.MakeHeaderForFilter(f, prev)
	if err != nil {
		t.Fatal(err)
	}
	return b, h
}

// checkStoreEqualsChain asserts the store's active chain is the node's, with
// every filter and header equal to the oracle's.
func checkStoreEqualsChain(t *testing.T, st *store.Store, c *fakeChain) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	tip, ok := st.Tip()
	if !ok || int(tip.Height) != len(c.active)-1 || tip.Hash != c.active[len(c.active)-1] {
		t.Fatalf("store tip %+v (ok %v), node tip %d %s", tip, ok, len(c.active)-1, c.active[len(c.active)-1])
	}
	recs, err := st.FiltersByHeight(0, tip.Height)
	if err != nil {
		t.Fatal(err)
	}
	var prev chainhash.Hash
	for i, r := range recs {
		wantFilter, wantHeader := c.oracle(t, c.active[i], prev)
		if r.Hash != c.active[i] || string(r.Filter) != string(wantFilter) || r.FilterHeader != wantHeader {
			t.Fatalf("height %d: store has %s filter %x header %s; want %s %x %s", i, r.Hash, r.Filter, r.FilterHeader, c.active[i], wantFilter, wantHeader)
		}
		prev = wantHeader
	}
}

func openStore(t *testing.T, genesis chainhash.Hash) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "cf.db"), genesis, store.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func testFollower(c *fakeChain, st *store.Store, cfg Config) *Follower {
	cfg.Genesis = c.genesis()
	if cfg.Workers == 0 {
		cfg.Workers = 4
	}
	return NewFollower(cfg, c, c, st, nil, nil, zerolog.Nop())
}

func TestFollowerSyncsAndFollowsReorgs(t *testing.T) {
	ctx := context.Background()
	c := newFakeChain(1)
	c.mine(700)
	st := openStore(t, c.genesis())
	f := testFollower(c, st, Config{BatchBlocks: 64})
	if err := f.checkNetwork(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	checkStoreEqualsChain(t, st, c)

	for _, depth := range []int{1, 6, 50} {
		t.Run(fmt.Sprintf("reorg depth %d", depth), func(t *testing.T) {
			stale := c.reorg(depth)
			if err := f.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			checkStoreEqualsChain(t, st, c)
			for _, h := range stale {
				rec, active, err := st.FilterByHash(h)
				if err != nil || active {
					t.Fatalf("stale block %s: active %v err %v", h, active, err)
				}
				if rec.Hash != h || len(rec.Filter) == 0 {
					t.Fatalf("stale block %s: record %+v", h, rec)
				}
			}
		})
	}
}

// linkBreakingChain reorganises the fake node in the middle of a round,
// after the follower fetched some blocks of the old branch.
type linkBreakingChain struct {
	*fakeChain
	once    sync.Once
	atCalls int
}

func (l *linkBreakingChain) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	b, p, err := l.fakeChain.FetchBlock(ctx, hash)
	l.fakeChain.mu.Lock()
	calls := l.fakeChain.calls
	l.fakeChain.mu.Unlock()
	if calls > l.atCalls {
		l.once.Do(func() { l.fakeChain.reorg(30) })
	}
	return b, p, err
}

func TestFollowerRecoversFromReorgDuringCatchUp(t *testing.T) {
	ctx := context.Background()
	c := newFakeChain(2)
	c.mine(300)
	lc := &linkBreakingChain{fakeChain: c, atCalls: 150}
	st := openStore(t, c.genesis())
	f := NewFollower(Config{Genesis: c.genesis(), Workers: 4, BatchBlocks: 16}, c, lc, st, nil, nil, zerolog.Nop())
	for i := 0; i < 5; i++ {
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	checkStoreEqualsChain(t, st, c)
}

func TestFollowerRunRetriesNodeFailuresAndStopsOnWrongNetwork(t *testing.T) {
	c := newFakeChain(3)
	c.mine(50)
	c.setFail(errors.New("connection refused"))
	st := openStore(t, c.genesis())
	wake := make(chan struct{}, 1)
	obs := &reachObserver{}
	f := NewFollower(Config{Genesis: c.genesis(), Workers: 2, PollInterval: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}, c, c, st, wake, obs, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()

	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.calls >= 2 })
	if err := obs.last(); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("node reachability while every call fails: %v, want the error", err)
	}
	c.setFail(nil)
	waitFor(t, func() bool { tip, ok := st.Tip(); return ok && tip.Height == 50 })
	waitFor(t, func() bool { return obs.reported() && obs.last() == nil })
	c.mine(3)
	wake <- struct{}{}
	waitFor(t, func() bool { tip, ok := st.Tip(); return ok && tip.Height == 53 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	checkStoreEqualsChain(t, st, c)

	other := newFakeChain(4)
	f2 := NewFollower(Config{Genesis: c.genesis()}, other, other, st, nil, nil, zerolog.Nop())
	if err := f2.Run(context.Background()); !errors.Is(err, nodeclient.ErrWrongNetwork) {
		t.Fatalf("Run against another network: %v, want nodeclient.ErrWrongNetwork", err)
	}
}

// reachObserver records what the follower reports of the node's
// reachability.
type reachObserver struct {
	NopObserver
	mu   sync.Mutex
	seen bool
	err  error
}

func (o *reachObserver) NodeReachable(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen, o.err = true, err
}

func (o *reachObserver) last() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

func (o *reachObserver) reported() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen
}

// waitFor polls cond until it holds or a deadline that scales with the
// machine's load passes.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testtime.WaitFor(t, "condition", 30*time.Second, cond)
}
