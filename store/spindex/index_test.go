package spindex_test

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/silentpay"
	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/store/spindex"
)

const testSeed = 0x5eed_5b1d

// chain is a test chain: the store records of heights 0..n-1 of one
// branch, each with its silent-payment data (tweak data and filter) that
// the test attaches or not.
type chain struct {
	recs   []store.BlockRecord
	tweaks [][]silentpay.TxTweak
	filter [][]byte
}

// genChain returns n blocks of branch on top of base's first `from`
// blocks (from = 0: a new genesis).
func genChain(base *chain, from int, branch uint64, n int) *chain {
	c := &chain{}
	if base != nil {
		c.recs = append(c.recs, base.recs[:from]...)
		c.tweaks = append(c.tweaks, base.tweaks[:from]...)
		c.filter = append(c.filter, base.filter[:from]...)
	}
	rng := rand.New(rand.NewPCG(testSeed, branch))
	for h := len(c.recs); h < from+n || (base == nil && h < n); h++ {
		var prev, prevFH chainhash.Hash
		if h > 0 {
			prev, prevFH = c.recs[h-1].Hash, c.recs[h-1].FilterHeader
		}
		hdr := wire.BlockHeader{Version: 0x20000000, PrevBlock: prev, Timestamp: time.Unix(1_600_000_000+int64(h)*600+int64(branch), 0), Bits: 0x207fffff, Nonce: rng.Uint32()}
		filter := []byte{1, byte(rng.UintN(256)), byte(rng.UintN(256)), byte(rng.UintN(256))}
		c.recs = append(c.recs, store.BlockRecord{Height: uint32(h), Hash: hdr.BlockHash(), Header: hdr, Filter: filter, FilterHeader: headers.FilterHeader(filter, prevFH)})
		var tw []silentpay.TxTweak
		for i := range rng.IntN(3) {
			t := silentpay.TxTweak{TxIndex: uint32(i + 1)}
			t.Point[0] = 2 + byte(rng.UintN(2))
			for j := 1; j < len(t.Point); j++ {
				t.Point[j] = byte(rng.UintN(256))
			}
			t.MaxTaprootValue = rng.Uint64N(1e8)
			tw = append(tw, t)
		}
		c.tweaks = append(c.tweaks, tw)
		c.filter = append(c.filter, []byte{byte(len(tw)), byte(rng.UintN(256))})
	}
	return c
}

// attach gives the records from..to-1 their silent-payment blocks,
// chaining headers from prev, and returns the last header.
func (c *chain) attach(from, to int, prev chainhash.Hash) chainhash.Hash {
	for h := from; h < to; h++ {
		blk := spindex.NewBlock(silentpay.AppendTweakData(nil, c.tweaks[h]), c.filter[h], prev)
		c.recs[h].SilentPay = &blk
		prev = blk.Header
	}
	return prev
}

func openStore(t *testing.T, path string, genesis chainhash.Hash) *store.Store {
	t.Helper()
	st, err := store.Open(path, genesis, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestCommitReadsWhatSilentpayCommitsTo: entries committed with the
// filters read back as written, and the stored header chain is the one
// silentpay.Commitment computes independently.
func TestCommitReadsWhatSilentpayCommitsTo(t *testing.T) {
	c := genChain(nil, 0, 1, 30)
	st := openStore(t, filepath.Join(t.TempDir(), "s.db"), c.recs[0].Hash)
	x := st.SilentPayments()
	if _, err := x.TweakData(1, 1); !errors.Is(err, spindex.ErrNotEnabled) {
		t.Fatalf("read before Enable: %v, want ErrNotEnabled", err)
	}
	if _, err := x.Enable(5); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Enable(6); !errors.Is(err, spindex.ErrStartHeight) {
		t.Fatalf("Enable at another start: %v", err)
	}
	c.attach(5, 30, chainhash.Hash{})
	if err := st.CommitBatch(c.recs[:12]); err != nil {
		t.Fatal(err)
	}
	if err := st.CommitBatch(c.recs[12:]); err != nil {
		t.Fatal(err)
	}
	s, _ := x.State()
	if up, ok := s.IndexedUpTo(); !ok || up != 29 || s.Start != 5 {
		t.Fatalf("state %+v", s)
	}
	tw, err := x.TweakData(5, 29)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := x.Headers(5, 29)
	if err != nil {
		t.Fatal(err)
	}
	var prev chainhash.Hash
	for i, r := range tw {
		h := 5 + i
		got, err := silentpay.ParseTweakData(r.TweakData)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(c.tweaks[h]) || r.BlockHash != c.recs[h].Hash {
			t.Fatalf("height %d: %d tweaks of %s, want %d of %s", h, len(got), r.BlockHash, len(c.tweaks[h]), c.recs[h].Hash)
		}
		blk := silentpay.Block{Hash: c.recs[h].Hash, Tweaks: got, Filter: c.filter[h]}
		want := blk.Commitment().Header(prev)
		if hs[i].Header != want || hs[i].CommitmentHash() != blk.Commitment().Hash() {
			t.Fatalf("height %d: header %s, silentpay computes %s", h, hs[i].Header, want)
		}
		prev = want
		f, err := x.FilterByHash(c.recs[h].Hash)
		if err != nil || string(f.Filter) != string(c.filter[h]) || f.Height != uint32(h) {
			t.Fatalf("filter by hash at %d: %+v %v", h, f, err)
		}
	}
	if s.Header != prev {
		t.Fatalf("state header %s, want %s", s.Header, prev)
	}
	cp, err := x.Checkpoints(c.recs[29].Hash)
	if err != nil || len(cp) != 0 {
		t.Fatalf("checkpoints below 1,000: %v %v", cp, err)
	}
	for _, rg := range []struct {
		start, end uint32
		want       error
	}{
		{4, 10, spindex.ErrNotFound},
		{5, 30, spindex.ErrNotFound},
		{10, 9, spindex.ErrBadRange},
		{5, 5 + spindex.MaxRange, spindex.ErrRangeTooLarge},
	} {
		if _, err := x.TweakData(rg.start, rg.end); !errors.Is(err, rg.want) {
			t.Errorf("TweakData(%d, %d): %v, want %v", rg.start, rg.end, err, rg.want)
		}
		if _, err := x.Headers(rg.start, rg.end); !errors.Is(err, rg.want) {
			t.Errorf("Headers(%d, %d): %v, want %v", rg.start, rg.end, err, rg.want)
		}
	}
}

// TestCommitRefusesBrokenHeaderChain: an entry whose header does not
// chain fails the whole CommitBatch, filters included.
func TestCommitRefusesBrokenHeaderChain(t *testing.T) {
	c := genChain(nil, 0, 2, 10)
	st := openStore(t, filepath.Join(t.TempDir(), "s.db"), c.recs[0].Hash)
	if _, err := st.SilentPayments().Enable(1); err != nil {
		t.Fatal(err)
	}
	c.attach(1, 10, chainhash.Hash{1})
	if err := st.CommitBatch(c.recs); !errors.Is(err, spindex.ErrHeaderMismatch) {
		t.Fatalf("CommitBatch: %v, want ErrHeaderMismatch", err)
	}
	if _, ok := st.Tip(); ok {
		t.Fatal("the filters were written")
	}
}

// TestGapIsLeftForBackfill: records committed without silent-payment data
// leave the frontier; entries above it are not written; Commit fills the
// gap only with active blocks from the frontier, and resumes after a
// reopen.
func TestGapIsLeftForBackfill(t *testing.T) {
	c := genChain(nil, 0, 3, 40)
	path := filepath.Join(t.TempDir(), "s.db")
	st := openStore(t, path, c.recs[0].Hash)
	if err := st.CommitBatch(c.recs[:20]); err != nil {
		t.Fatal(err)
	}
	x := st.SilentPayments()
	if _, err := x.Enable(1); err != nil {
		t.Fatal(err)
	}
	last := c.attach(1, 40, chainhash.Hash{})
	if err := st.CommitBatch(c.recs[20:30]); err != nil { // above the frontier: filters only
		t.Fatal(err)
	}
	if s, _ := x.State(); s.Next != 1 {
		t.Fatalf("frontier moved to %d", s.Next)
	}
	entry := func(h int) spindex.Entry {
		return spindex.Entry{Height: uint32(h), Hash: c.recs[h].Hash, Block: *c.recs[h].SilentPay}
	}
	var es []spindex.Entry
	for h := 1; h < 15; h++ {
		es = append(es, entry(h))
	}
	if err := x.Commit(es[1:]); !errors.Is(err, spindex.ErrStale) {
		t.Fatalf("Commit above the frontier: %v, want ErrStale", err)
	}
	other := genChain(c, 10, 9, 5)
	bad := append([]spindex.Entry{}, es...)
	bad[12].Hash = other.recs[13].Hash
	if err := x.Commit(bad); !errors.Is(err, spindex.ErrStale) {
		t.Fatalf("Commit of a block not active: %v, want ErrStale", err)
	}
	if err := x.Commit(es); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st = openStore(t, path, c.recs[0].Hash)
	x = st.SilentPayments()
	if s, _ := x.State(); s.Next != 15 {
		t.Fatalf("after reopen the frontier is %d, want 15", s.Next)
	}
	es = es[:0]
	for h := 15; h < 30; h++ {
		es = append(es, entry(h))
	}
	if err := x.Commit(es); err != nil {
		t.Fatal(err)
	}
	if err := st.CommitBatch(c.recs[30:]); err != nil { // caught up: with the filters
		t.Fatal(err)
	}
	if s, _ := x.State(); s.Next != 40 || s.Header != last {
		t.Fatalf("state %+v, want next 40 and header %s", s, last)
	}
}

// TestRollbackAndReorgTrimTheIndex: disconnected blocks leave the index
// in the same transaction, and the new branch's entries continue from the
// fork's header.
func TestRollbackAndReorgTrimTheIndex(t *testing.T) {
	c := genChain(nil, 0, 4, 30)
	st := openStore(t, filepath.Join(t.TempDir(), "s.db"), c.recs[0].Hash)
	x := st.SilentPayments()
	if _, err := x.Enable(1); err != nil {
		t.Fatal(err)
	}
	c.attach(1, 30, chainhash.Hash{})
	if err := st.CommitBatch(c.recs); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Rollback(25); err != nil {
		t.Fatal(err)
	}
	s, _ := x.State()
	if s.Next != 26 || s.Header != c.recs[25].SilentPay.Header {
		t.Fatalf("after rollback to 25: %+v", s)
	}
	if _, err := x.FilterByHash(c.recs[27].Hash); !errors.Is(err, spindex.ErrNotFound) {
		t.Fatalf("filter of a disconnected block: %v", err)
	}
	b := genChain(c, 21, 5, 14)
	b.attach(21, 35, c.recs[20].SilentPay.Header)
	if _, err := st.Reorg(20, b.recs[21:]); err != nil {
		t.Fatal(err)
	}
	hs, err := x.Headers(18, 34)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range hs {
		if want := b.recs[18+i]; r.BlockHash != want.Hash || r.Header != want.SilentPay.Header {
			t.Fatalf("height %d: %s %s, want %s %s", 18+i, r.BlockHash, r.Header, want.Hash, want.SilentPay.Header)
		}
	}
}

// TestReadsDetectFlippedByte: a flipped byte in any stored value fails
// the read that meets it with a MismatchError naming the height, and no
// other read.
func TestReadsDetectFlippedByte(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bucket []byte
		read   func(x *spindex.Index) error
	}{
		{"tweak data", spindex.BucketTweaks, func(x *spindex.Index) error { _, err := x.TweakData(1, 9); return err }},
		{"taproot filter", spindex.BucketFilters, func(x *spindex.Index) error { _, err := x.FilterByHeight(7); return err }},
		{"commitment header", spindex.BucketHeaders, func(x *spindex.Index) error { _, err := x.Headers(7, 7); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := genChain(nil, 0, 6, 10)
			path := filepath.Join(t.TempDir(), "s.db")
			st := openStore(t, path, c.recs[0].Hash)
			if _, err := st.SilentPayments().Enable(1); err != nil {
				t.Fatal(err)
			}
			c.attach(1, 10, chainhash.Hash{})
			if err := st.CommitBatch(c.recs); err != nil {
				t.Fatal(err)
			}
			st.Close()
			db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error {
				bk := tx.Bucket(tc.bucket)
				v := append([]byte(nil), bk.Get(spindex.HeightKey(7))...)
				v[len(v)-5] ^= 0x10
				return bk.Put(spindex.HeightKey(7), v)
			})
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			st = openStore(t, path, c.recs[0].Hash)
			err = tc.read(st.SilentPayments())
			var m *spindex.MismatchError
			if !errors.As(err, &m) || m.Height != 7 || m.What != tc.name {
				t.Fatalf("read: %v, want a mismatch of %s at 7", err, tc.name)
			}
			if _, err := st.SilentPayments().Headers(8, 9); err != nil {
				t.Fatalf("read beside the damage: %v", err)
			}
		})
	}
}

// TestOpenDropsEntriesOfBlocksNoLongerActive: entries an older build left
// above a rollback (their block hash no longer the active one) are
// dropped at Open, down to the highest entry that still matches.
func TestOpenDropsEntriesOfBlocksNoLongerActive(t *testing.T) {
	c := genChain(nil, 0, 7, 20)
	path := filepath.Join(t.TempDir(), "s.db")
	st := openStore(t, path, c.recs[0].Hash)
	if _, err := st.SilentPayments().Enable(1); err != nil {
		t.Fatal(err)
	}
	c.attach(1, 20, chainhash.Hash{})
	if err := st.CommitBatch(c.recs); err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for h := uint32(16); h < 20; h++ { // another branch's blocks above 15
			if err := tx.Bucket(spindex.BucketHeaders).Put(spindex.HeightKey(h), spindex.HeaderValueWithBlock(h, chainhash.Hash{9, byte(h)})); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	st = openStore(t, path, c.recs[0].Hash)
	s, _ := st.SilentPayments().State()
	if s.Next != 16 || s.Header != c.recs[15].SilentPay.Header {
		t.Fatalf("state after Open: next %d header %s, want 16 %s", s.Next, s.Header, c.recs[15].SilentPay.Header)
	}
}
