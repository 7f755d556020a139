package p2p

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/wireframe"
)

// storeView is a ChainView over a real store for this package's tests
// and benchmarks, as the daemon's adapter (cmd/cfindexd) is: the store's
// records converted to this package's, its ErrNotFound to ErrNotFound.
type storeView struct{ s *store.Store }

func newStoreView(s *store.Store) ChainView { return storeView{s} }

func notFound(err error) error {
	if err != nil && errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}

func (v storeView) Tip() (Tip, bool) {
	t, ok := v.s.Tip()
	return Tip{Height: t.Height, Hash: t.Hash}, ok
}

func (v storeView) TipChanged() <-chan struct{} { return v.s.TipChanged() }

func (v storeView) HeightOf(hash chainhash.Hash) (uint32, bool, error) {
	h, active, err := v.s.HeightOf(hash)
	return h, active, notFound(err)
}

func (v storeView) HeaderByHash(hash chainhash.Hash) (wire.BlockHeader, uint32, error) {
	hdr, h, err := v.s.HeaderByHash(hash)
	return hdr, h, notFound(err)
}

func (v storeView) Headers(start, end uint32) ([]wire.BlockHeader, error) {
	hs, err := v.s.Headers(start, end)
	return hs, notFound(err)
}

func (v storeView) AppendBlockHashes(dst []chainhash.Hash, stop chainhash.Hash, start uint32) ([]chainhash.Hash, error) {
	hs, err := v.s.AppendBlockHashesForStop(dst, stop, start)
	return hs, notFound(err)
}

func (v storeView) EachFilter(start uint32, hashes []chainhash.Hash, fn func(i int, filter []byte, checksum [4]byte) (bool, error)) (int, error) {
	n, err := v.s.EachFilter(start, hashes, func(i int, filter []byte, sum wireframe.Checksum) (bool, error) {
		return fn(i, filter, sum)
	})
	return n, notFound(err)
}

func (v storeView) AppendFilterHashes(dst []byte, stop chainhash.Hash, start uint32) (chainhash.Hash, []byte, error) {
	prev, out, err := v.s.AppendFilterHashesForStop(dst, stop, start)
	return prev, out, notFound(err)
}

func (v storeView) FilterHeaderCheckpoints(stop chainhash.Hash, interval uint32) ([]chainhash.Hash, error) {
	hs, err := v.s.FilterHeaderCheckpoints(stop, interval)
	return hs, notFound(err)
}

func records(bs []*fakeBlock) []store.BlockRecord {
	out := make([]store.BlockRecord, len(bs))
	for i, b := range bs {
		out[i] = store.BlockRecord{Height: b.height, Hash: b.hash, Header: b.header, Filter: b.filter, FilterHeader: b.filterHeader}
	}
	return out
}

func commitAll(t *testing.T, s *store.Store, bs []*fakeBlock) {
	t.Helper()
	for len(bs) > 0 {
		n := min(len(bs), 500)
		if err := s.CommitBatch(records(bs[:n])); err != nil {
			t.Fatal(err)
		}
		bs = bs[n:]
	}
}

// TestServesFromRealStore runs the BIP-157 requests against a bbolt store
// holding an active chain of 2,600 blocks and a stale branch forking at
// 1,500 up to 2,200, through a store view.
func TestServesFromRealStore(t *testing.T) {
	model := newFakeView(2600, 31)
	stale := model.makeBranch(model.at(1500), 700)
	active := make([]*fakeBlock, 2600)
	for h := range active {
		active[h] = model.at(uint32(h))
	}

	st, err := store.Open(filepath.Join(t.TempDir(), "filters.db"), active[0].hash, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	commitAll(t, st, active[:1501])
	commitAll(t, st, stale)
	if _, err := st.Rollback(1500); err != nil {
		t.Fatal(err)
	}
	commitAll(t, st, active[1501:2599]) // block 2599 comes during a wait below

	cfg := testConfig(nil)
	cfg.View = newStoreView(st)
	srv := startServer(t, cfg)
	c, v := connect(t, srv.addr)
	if v.LastBlock != 2598 {
		t.Fatalf("start height %d", v.LastBlock)
	}

	// getcfilters over the stale branch.
	c.send(wire.NewMsgGetCFilters(wire.GCSFilterRegular, 1401, &stale[99].hash))
	want := append(append([]*fakeBlock{}, active[1401:1501]...), stale[:100]...)
	wantFilters(t, c.sync(), want)

	// getcfheaders: the full 2,000 on the active chain, and a stale range.
	c.send(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 501, &active[2500].hash))
	checkCFHeaders(t, c.sync()[0].(*wire.MsgCFHeaders), active[500].filterHeader, active[501:2501])
	c.send(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 1501, &stale[699].hash))
	checkCFHeaders(t, c.sync()[0].(*wire.MsgCFHeaders), active[1500].filterHeader, stale)
	// A range wholly on the branch: the previous header is a stale block's.
	c.send(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 1600, &stale[199].hash))
	checkCFHeaders(t, c.sync()[0].(*wire.MsgCFHeaders), stale[98].filterHeader, stale[99:200])
	// From genesis: the previous header is the zero hash.
	c.send(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 0, &active[1999].hash))
	checkCFHeaders(t, c.sync()[0].(*wire.MsgCFHeaders), chainhash.Hash{}, active[:2000])

	// getcfcheckpt on both branches.
	c.send(wire.NewMsgGetCFCheckpt(wire.GCSFilterRegular, &stale[699].hash))
	checkCheckpoints(t, c.sync()[0].(*wire.MsgCFCheckpt), []chainhash.Hash{active[1000].filterHeader, stale[499].filterHeader})
	c.send(wire.NewMsgGetCFCheckpt(wire.GCSFilterRegular, &active[2598].hash))
	checkCheckpoints(t, c.sync()[0].(*wire.MsgCFCheckpt), []chainhash.Hash{active[1000].filterHeader, active[2000].filterHeader})

	// getheaders from a locator.
	gh := wire.NewMsgGetHeaders()
	_ = gh.AddBlockLocatorHash(&stale[10].hash)
	_ = gh.AddBlockLocatorHash(&active[1400].hash)
	c.send(gh)
	if hs := c.sync()[0].(*wire.MsgHeaders).Headers; len(hs) != 1198 || hs[0].BlockHash() != active[1401].hash {
		t.Fatalf("%d headers from locator", len(hs))
	}

	// A stop hash committed right after the request (it may or may not
	// be waiting yet; either way it is answered).
	next := active[2599]
	c.send(wire.NewMsgGetCFilters(wire.GCSFilterRegular, 2590, &next.hash))
	commitAll(t, st, []*fakeBlock{next})
	var got []wire.Message
	for _, m := range c.sync() {
		if _, inv := m.(*wire.MsgInv); !inv {
			got = append(got, m)
		}
	}
	wantFilters(t, got, active[2590:2600])
}
