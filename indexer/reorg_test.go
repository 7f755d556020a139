package indexer

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/store"
)

// invalidate drops the top n blocks from the active chain, as the node
// looks between the disconnects and the connects of a reorg, or after
// invalidateblock with nothing mined since.
func (c *fakeChain) invalidate(n int) []chainhash.Hash {
	c.mu.Lock()
	defer c.mu.Unlock()
	dropped := append([]chainhash.Hash(nil), c.active[len(c.active)-n:]...)
	c.active = c.active[:len(c.active)-n]
	return dropped
}

// reconnect appends blocks the chain already knows back onto the active
// chain (a node reindexing, or reconsiderblock).
func (c *fakeChain) reconnect(hashes []chainhash.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active = append(c.active, hashes...)
}

// mineBits mines n blocks with the given compact target on the active tip.
func (c *fakeChain) mineBits(n int, bits uint32) []chainhash.Hash {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.bits
	c.bits = bits
	defer func() { c.bits = old }()
	return c.extendFrom(c.active[len(c.active)-1], n)
}

// fakeClock is a settable clock for Follower.now.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// syncTip runs one Sync round and returns the store's tip afterwards.
func syncTip(t *testing.T, f *Follower, st *store.Store) store.Tip {
	t.Helper()
	if err := f.Sync(context.Background()); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	tip, _ := st.Tip()
	return tip
}

// TestFollowerHoldsLowerWorkUntilSettled drives a node through the states
// a reorg passes: the old blocks disconnected and nothing connected yet,
// the new branch shorter, as long, then longer; blocks invalidated with no
// replacement; a longer branch with less work. The store keeps the indexed
// tip while the node's chain has no more work, switches as soon as the
// node's has more, and follows a chain with less work only once the node
// has stayed on it for the settle time.
func TestFollowerHoldsLowerWorkUntilSettled(t *testing.T) {
	const settle = 10 * time.Second
	c := newFakeChain(10)
	c.mine(100)
	st := openStore(t, c.genesis())
	f := testFollower(c, st, Config{ReorgSettle: settle})
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	f.now = clock.now
	indexed := syncTip(t, f, st)
	if indexed.Height != 100 {
		t.Fatalf("initial sync to %d", indexed.Height)
	}

	// Disconnects done, connects not yet: the node is at 97.
	c.invalidate(3)
	for _, step := range []func(){
		func() {},
		func() { clock.advance(settle - time.Second) },
		func() { c.mine(2) }, // 99: shorter
		func() { c.mine(1) }, // 100: as long, equal work
	} {
		step()
		if tip := syncTip(t, f, st); tip != indexed {
			t.Fatalf("store moved to %d %s while the node's chain had no more work", tip.Height, tip.Hash)
		}
	}
	c.mine(1) // 101: more work, before the settle time ran out
	if tip := syncTip(t, f, st); tip.Height != 101 {
		t.Fatalf("store at %d, want the node's branch at 101 as soon as it has more work", tip.Height)
	}
	checkStoreEqualsChain(t, st, c)

	// invalidateblock with no replacement: held for the settle time, then
	// followed down.
	indexed, _ = st.Tip()
	c.invalidate(2)
	for _, d := range []time.Duration{0, settle / 2, settle/2 - time.Millisecond} {
		clock.advance(d)
		if tip := syncTip(t, f, st); tip != indexed {
			t.Fatalf("store moved to %d after %v of the settle time", tip.Height, d)
		}
	}
	clock.advance(time.Millisecond)
	if tip := syncTip(t, f, st); tip.Height != 99 {
		t.Fatalf("store at %d after the settle time, want the node's 99", tip.Height)
	}
	checkStoreEqualsChain(t, st, c)

	// A longer branch with less work: the indexed top has blocks eight
	// times as hard as the node's new ones.
	c.mineBits(3, 0x2007ffff)
	indexed = syncTip(t, f, st)
	c.invalidate(3)
	c.mine(5)
	if tip := syncTip(t, f, st); tip != indexed {
		t.Fatalf("store moved to the longer branch with less work at %d", tip.Height)
	}
	clock.advance(settle)
	if tip := syncTip(t, f, st); tip.Height != 104 {
		t.Fatalf("store at %d after the settle time, want the node's branch at 104", tip.Height)
	}
	checkStoreEqualsChain(t, st, c)
}

// TestFollowerRefusesDeepReorgs: a reorg deeper than ReorgSafetyDepth, and
// a node whose chain shares only the genesis block with the index, stop
// the follower with an error that says what happened and what to do,
// unless AllowDeepReorg is set; a node far behind on the indexed chain
// (reindexing) is waited for and never followed down.
func TestFollowerRefusesDeepReorgs(t *testing.T) {
	ctx := context.Background()
	c := newFakeChain(11)
	c.mine(60)
	st := openStore(t, c.genesis())
	f := testFollower(c, st, Config{ReorgSafetyDepth: 20})
	indexed := syncTip(t, f, st)

	stale := c.reorg(30)
	err := f.Sync(ctx)
	if !errors.Is(err, ErrDeepReorg) || !isFatal(err) || errorKind(err) != "reorg" {
		t.Fatalf("30-block reorg with reorgsafetydepth 20: %v, want fatal ErrDeepReorg", err)
	}
	for _, want := range []string{"height 30", "30 blocks below", "reorgsafetydepth is 20", "--reindex", "allowdeepreorg = true"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if tip, _ := st.Tip(); tip != indexed {
		t.Fatalf("refused reorg moved the store to %d", tip.Height)
	}
	allow := testFollower(c, st, Config{ReorgSafetyDepth: 20, AllowDeepReorg: true})
	if tip := syncTip(t, allow, st); tip.Height != 61 {
		t.Fatalf("with allowdeepreorg the store is at %d, want 61", tip.Height)
	}
	checkStoreEqualsChain(t, st, c)

	// The node reindexes: its chain is the indexed one cut far below the
	// tip, then grows back. The store never moves down.
	indexed, _ = st.Tip()
	dropped := c.invalidate(55)
	for range 2 {
		if tip := syncTip(t, f, st); tip != indexed {
			t.Fatalf("store moved to %d while the node was behind on the same chain", tip.Height)
		}
	}
	c.reconnect(dropped)
	c.mine(1)
	if tip := syncTip(t, f, st); tip.Height != 62 {
		t.Fatalf("store at %d once the node caught up, want 62", tip.Height)
	}
	checkStoreEqualsChain(t, st, c)

	// The node's data was wiped (btcd --regtest restarted): at genesis it
	// is only behind; once it mines, it is another chain.
	indexed, _ = st.Tip()
	c.invalidate(62)
	if tip := syncTip(t, f, st); tip != indexed {
		t.Fatalf("store moved to %d when the node went back to genesis", tip.Height)
	}
	c.mine(5)
	err = f.Sync(ctx)
	if !errors.Is(err, ErrChainVanished) || !isFatal(err) {
		t.Fatalf("node with a new chain from genesis: %v, want fatal ErrChainVanished", err)
	}
	for _, want := range []string{"wiped", "--regtest", "--reindex", "allowdeepreorg"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	_ = stale
}

// writeRecord is one write of the store: when, the new tip, and the work
// of the chain up to it.
type writeRecord struct {
	at   time.Time
	tip  store.Tip
	work *big.Int
}

// recordingStore records every write the follower makes.
type recordingStore struct {
	*store.Store
	mu     sync.Mutex
	writes []writeRecord
}

func (r *recordingStore) record() {
	at := time.Now()
	tip, _ := r.Store.Tip()
	work, err := storedWork(r.Store, 0, tip.Height)
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, writeRecord{at: at, tip: tip, work: work})
}

func (r *recordingStore) CommitBatch(recs []store.BlockRecord) error {
	defer r.record()
	return r.Store.CommitBatch(recs)
}

func (r *recordingStore) Rollback(to uint32) ([]store.BlockRecord, error) {
	defer r.record()
	return r.Store.Rollback(to)
}

func (r *recordingStore) Reorg(to uint32, recs []store.BlockRecord) ([]store.BlockRecord, error) {
	defer r.record()
	return r.Store.Reorg(to, recs)
}

// recordedTip is the tip of the last recorded write: a test that waits
// on it, rather than on the store's tip, sees the write's record too.
func (r *recordingStore) recordedTip() chainhash.Hash {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.writes) == 0 {
		return chainhash.Hash{}
	}
	return r.writes[len(r.writes)-1].tip.Hash
}

// since returns the writes at or after t.
func (r *recordingStore) since(t time.Time) []writeRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []writeRecord
	for _, w := range r.writes {
		if !w.at.Before(t) {
			out = append(out, w)
		}
	}
	return out
}

// TestFollowerNeverShowsLessWorkBeforeSettle runs the follower polling
// every millisecond against a node that invalidates its top blocks and
// then mines the replacement one block at a time, and later invalidates
// blocks for good. Every write of the store is recorded: none may leave a
// tip with less work than the store had before the node changed, earlier
// than the settle time after the change; and the store does follow the
// node down once the settle time has passed.
func TestFollowerNeverShowsLessWorkBeforeSettle(t *testing.T) {
	const settle = 400 * time.Millisecond
	c := newFakeChain(12)
	c.mine(80)
	rs := &recordingStore{Store: openStore(t, c.genesis())}
	f := NewFollower(Config{Genesis: c.genesis(), Workers: 2, PollInterval: time.Millisecond, ReorgSettle: settle},
		c, c, rs, nil, nil, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	atTip := func(what string) {
		t.Helper()
		testtime.WaitFor(t, what, 30*time.Second, func() bool {
			best, _ := c.GetBestBlockHash(ctx)
			return rs.recordedTip() == best
		})
	}
	atTip("initial sync")

	// checkNoLowerWork fails on a write, after changed, that left less
	// work than before changed earlier than the settle time.
	checkNoLowerWork := func(changed time.Time, before *big.Int) {
		t.Helper()
		for _, w := range rs.since(changed) {
			if w.work.Cmp(before) < 0 && w.at.Sub(changed) < settle {
				t.Errorf("store moved to %d (less work) %v after the node changed, within the settle time %v", w.tip.Height, w.at.Sub(changed), settle)
			}
		}
	}

	// Invalidate three, then mine four one by one.
	before, _ := storedWork(rs, 0, 80)
	changed := time.Now()
	c.invalidate(3)
	for range 4 {
		time.Sleep(settle / 10)
		c.mine(1)
	}
	atTip("the replacement branch")
	checkNoLowerWork(changed, before)
	if tip, _ := rs.Tip(); tip.Height != 81 {
		t.Fatalf("store at %d, want 81", tip.Height)
	}

	// Invalidate two for good: followed only after the settle time.
	before, _ = storedWork(rs, 0, 81)
	changed = time.Now()
	c.invalidate(2)
	atTip("the shorter chain")
	checkNoLowerWork(changed, before)
	ws := rs.since(changed)
	if len(ws) == 0 || ws[len(ws)-1].tip.Height != 79 {
		t.Fatalf("writes after the invalidation: %+v", ws)
	}
	if waited := ws[len(ws)-1].at.Sub(changed); waited < settle {
		t.Fatalf("followed the shorter chain after %v, before the settle time %v", waited, settle)
	}
}

// TestErrorKindsListsEveryKind: every kind Run reports is in ErrorKinds,
// so metrics can export each at 0 from the start.
func TestErrorKindsListsEveryKind(t *testing.T) {
	listed := map[string]bool{}
	for _, k := range ErrorKinds() {
		listed[k] = true
	}
	for _, err := range []error{errors.New("refused"), ErrChainMismatch, ErrDeepReorg, ErrChainVanished, errStore, nodeclient.ErrWrongNetwork} {
		if k := errorKind(err); !listed[k] {
			t.Errorf("errorKind(%v) = %q, not in ErrorKinds %v", err, k, ErrorKinds())
		}
	}
}
