package indexer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"

	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/silentpay"
	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/store/spindex"
)

// spEntries builds, with package silentpay alone, the silent-payment
// entries of blocks (heights 1.., in order) whose inputs spend prevs:
// the index a store built from scratch must hold.
func spEntries(t *testing.T, blocks []*wire.MsgBlock, prevs [][][]byte) []spindex.Entry {
	t.Helper()
	var sb silentpay.BlockBuilder
	var prev chainhash.Hash
	out := make([]spindex.Entry, len(blocks))
	for i, blk := range blocks {
		b, err := sb.BuildMsgBlock(blk, prevs[i])
		if err != nil {
			t.Fatal(err)
		}
		out[i] = spindex.Entry{Height: uint32(i + 1), Hash: b.Hash, Block: spindex.NewBlock(silentpay.AppendTweakData(nil, b.Tweaks), b.Filter, prev)}
		prev = out[i].Header
	}
	return out
}

// fakeSPEntries is spEntries over the fake chain's active blocks.
func fakeSPEntries(t *testing.T, c *fakeChain) []spindex.Entry {
	t.Helper()
	c.mu.Lock()
	var blocks []*wire.MsgBlock
	var prevs [][][]byte
	for _, h := range c.active[1:] {
		blocks, prevs = append(blocks, c.blocks[h]), append(prevs, c.prevs[h])
	}
	c.mu.Unlock()
	return spEntries(t, blocks, prevs)
}

// checkSPIndex fails the test unless x covers exactly want (heights 1..)
// with the same block hashes, tweak data, taproot filters and commitment
// headers, each header chained onto the one before.
func checkSPIndex(t *testing.T, x *spindex.Index, want []spindex.Entry) {
	t.Helper()
	st, _ := x.State()
	if st.Start != 1 || st.Next != uint32(len(want))+1 {
		t.Fatalf("index covers %d..%d, want 1..%d", st.Start, int64(st.Next)-1, len(want))
	}
	var prev chainhash.Hash
	for from := uint32(1); from <= uint32(len(want)); from += spindex.MaxRange {
		to := min(uint32(len(want)), from+spindex.MaxRange-1)
		hs, err := x.Headers(from, to)
		if err != nil {
			t.Fatal(err)
		}
		tds, err := x.TweakData(from, to)
		if err != nil {
			t.Fatal(err)
		}
		for i := range hs {
			w := &want[int(from)-1+i]
			_, _, commitment := w.Commitment()
			if hs[i].BlockHash != w.Hash || hs[i].Header != w.Header || hs[i].Header != spindex.ChainHeader(commitment, prev) {
				t.Fatalf("height %d: block %s header %s, want %s %s", w.Height, hs[i].BlockHash, hs[i].Header, w.Hash, w.Header)
			}
			if hs[i].CommitmentHash() != commitment {
				t.Fatalf("height %d: commitment hash %s, want %s", w.Height, hs[i].CommitmentHash(), commitment)
			}
			if !bytes.Equal(tds[i].TweakData, w.TweakData) {
				t.Fatalf("height %d: tweak data %x, want %x", w.Height, tds[i].TweakData, w.TweakData)
			}
			f, err := x.FilterByHeight(w.Height)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(f.Filter, w.Filter) {
				t.Fatalf("height %d: taproot filter %x, want %x", w.Height, f.Filter, w.Filter)
			}
			prev = hs[i].Header
		}
	}
}

// gatedSource serves the backfill from the fake chain but holds every
// fetch of a block at or above gate until release is closed, so a test
// can make the follower move the chain while a backfill batch is in
// flight, whatever the machine's speed.
type gatedSource struct {
	c       *fakeChain
	gate    uint32
	reached chan struct{} // closed at the first held fetch
	once    sync.Once
	release chan struct{}
}

func (g *gatedSource) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	g.c.mu.Lock()
	held := false
	for h := int(g.gate); h < len(g.c.active); h++ {
		held = held || g.c.active[h] == hash
	}
	g.c.mu.Unlock()
	if held {
		g.once.Do(func() { close(g.reached) })
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	return g.c.FetchBlock(ctx, hash)
}

// spState waits until the index's Next is next.
func waitSPNext(t *testing.T, x *spindex.Index, next func() uint32) {
	t.Helper()
	testtime.WaitFor(t, "silent-payment index at the tip", 60*time.Second, func() bool {
		st, _ := x.State()
		return st.Next == next()
	})
}

// runBackfill runs b until the test ends and fails the test if Run
// returns an error.
func runBackfill(t *testing.T, b *SPBackfill) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("SPBackfill.Run: %v", err)
		}
	})
}

// TestSPBackfillRacesTheFollower: the index is turned on for a store of
// 300 blocks; while a backfill batch is held in flight, the follower
// indexes 40 new blocks and a reorg of 3 (filters only: the frontier is
// behind). Released, the backfill follows the tip rather than the height
// it started at; once it has caught up, the follower attaches new blocks
// itself. The index ends complete, chained, and equal to one built from
// scratch.
func TestSPBackfillRacesTheFollower(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(2*time.Minute))
	defer cancel()
	c := newFakeChain(19)
	c.mine(300)
	st := openStore(t, c.genesis())
	if err := testFollower(c, st, Config{BatchBlocks: 64}).Sync(ctx); err != nil {
		t.Fatal(err)
	}
	x := st.SilentPayments()
	if _, err := x.Enable(1); err != nil {
		t.Fatal(err)
	}
	f := testFollower(c, st, Config{BatchBlocks: 64, SilentPayments: x})
	src := &gatedSource{c: c, gate: 2*spBackfillBatch + 1, reached: make(chan struct{}), release: make(chan struct{})}
	runBackfill(t, NewSPBackfill(x, st, src, 2, nil, zerolog.Nop()))
	select {
	case <-src.reached:
	case <-ctx.Done():
		t.Fatal("the backfill never reached its third batch")
	}

	c.mine(40)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	c.reorg(3)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	tip, _ := st.Tip()
	if sp, _ := x.State(); tip.Height != 341 || sp.Next != src.gate {
		t.Fatalf("while the backfill is held: tip %d, index next %d; want 341 and %d", tip.Height, sp.Next, src.gate)
	}
	close(src.release)
	tipNext := func() uint32 { tip, _ := st.Tip(); return tip.Height + 1 }
	waitSPNext(t, x, tipNext)

	// Caught up: the follower's own rounds keep the index at the tip, in
	// the transactions that write the filters, across a reorg too.
	for _, move := range []func(){func() { c.mine(5) }, func() { c.reorg(2) }, func() { c.mine(70) }} {
		move()
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		waitSPNext(t, x, tipNext)
	}
	checkStoreEqualsChain(t, st, c)
	checkSPIndex(t, x, fakeSPEntries(t, c))
}

// spObserver counts what the backfill reports.
type spObserver struct{ mismatches, repairs atomic.Int32 }

func (o *spObserver) SPChecksumMismatch() { o.mismatches.Add(1) }
func (o *spObserver) SPRepaired()         { o.repairs.Add(1) }

// lockedBuffer is a log sink safe for the backfill's goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

// TestSPBackfillRepairsDamagedValues: a stored value of the index whose
// byte was flipped is never returned (the read fails with the mismatch);
// readers' reports of it and the start-up scrub lead to one rewind below
// it, logged and counted once, and the backfill rebuilds the index equal
// to one built from scratch.
func TestSPBackfillRepairsDamagedValues(t *testing.T) {
	for _, tc := range []struct {
		bucket string
		height uint32
		read   func(x *spindex.Index, h uint32) error
	}{
		{"sp_tweaks", 97, func(x *spindex.Index, h uint32) error { _, err := x.TweakData(h-5, h+5); return err }},
		{"sp_filters", 150, func(x *spindex.Index, h uint32) error { _, err := x.FilterByHeight(h); return err }},
		{"sp_headers", 3, func(x *spindex.Index, h uint32) error { _, err := x.Headers(1, h); return err }},
	} {
		t.Run(tc.bucket, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(time.Minute))
			defer cancel()
			c := newFakeChain(23)
			c.mine(200)
			path := filepath.Join(t.TempDir(), "cf.db")
			st, err := store.Open(path, c.genesis(), store.Options{Timeout: time.Second, NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.SilentPayments().Enable(1); err != nil {
				t.Fatal(err)
			}
			if err := testFollower(c, st, Config{BatchBlocks: 64, SilentPayments: st.SilentPayments()}).Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			flipStoredByte(t, path, tc.bucket, tc.height)
			st, err = store.Open(path, c.genesis(), store.Options{Timeout: time.Second, NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			x := st.SilentPayments()
			readErr := tc.read(x, tc.height)
			var m *spindex.MismatchError
			if !errors.As(readErr, &m) || m.Height != tc.height {
				t.Fatalf("read over the damage: %v, want a mismatch at %d", readErr, tc.height)
			}

			var logs lockedBuffer
			obs := &spObserver{}
			b := NewSPBackfill(x, st, c, 2, obs, zerolog.New(&logs))
			for range 3 { // readers meeting the damage before the backfill runs
				if !b.Damaged(readErr) {
					t.Fatal("Damaged did not take a mismatch")
				}
			}
			if b.Damaged(errors.New("node down")) || b.Damaged(spindex.ErrNotFound) {
				t.Fatal("Damaged took an error that is no mismatch")
			}
			runBackfill(t, b)
			testtime.WaitFor(t, "the repair", 60*time.Second, func() bool { return obs.repairs.Load() == 1 })
			waitSPNext(t, x, func() uint32 { return 201 })
			if err := tc.read(x, tc.height); err != nil {
				t.Fatalf("read after the repair: %v", err)
			}
			// A late report of the repaired damage changes nothing.
			b.Damaged(readErr)
			checkSPIndex(t, x, fakeSPEntries(t, c))
			if got := logs.count("fails its checksum"); got != 1 || obs.mismatches.Load() != 1 || obs.repairs.Load() != 1 {
				t.Fatalf("logged %d times, counted %d mismatches and %d repairs; want 1 each", got, obs.mismatches.Load(), obs.repairs.Load())
			}
		})
	}
}

// flipStoredByte flips the last byte of the value at height in bucket of
// the closed store file at path.
func flipStoredByte(t *testing.T, path, bucket string, height uint32) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(bucket))
		k := binary.BigEndian.AppendUint32(nil, height)
		v := bytes.Clone(bk.Get(k))
		v[len(v)-1] ^= 0x40
		return bk.Put(k, v)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}
