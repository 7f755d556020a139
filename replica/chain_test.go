package replica

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/gcs"
	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/cfindexd/cfindexd/netparams"
	"github.com/cfindexd/cfindexd/replica/layouttest"
	"github.com/cfindexd/cfindexd/store"
)

// testChain is a regtest chain mined in the test, with each block's basic
// filter and filter header.
type testChain struct {
	params        *chaincfg.Params
	headers       []wire.BlockHeader
	hashes        []chainhash.Hash
	filters       [][]byte
	filterHeaders []chainhash.Hash
}

func regtest(t testing.TB) netparams.Network {
	nw, err := netparams.Lookup("regtest")
	if err != nil {
		t.Fatal(err)
	}
	return nw
}

// mineChain mines n blocks after regtest's genesis, each paying to a
// script of its own so that filters differ.
func mineChain(n int) *testChain {
	p := &chaincfg.RegressionNetParams
	c := &testChain{params: p}
	c.add(p.GenesisBlock)
	for i := 1; i <= n; i++ {
		prev := c.headers[len(c.headers)-1]
		script := []byte{0x51, 0x20} // OP_1 <32 bytes>: a taproot-shaped output
		var key [32]byte
		key[0], key[1], key[2] = byte(i), byte(i>>8), byte(i>>16)
		c.add(btcdtest.MineBlockOn(p, c.hashes[len(c.hashes)-1], int32(i-1), prev.Timestamp, nil, append(script, key[:]...)))
	}
	return c
}

func (c *testChain) add(b *wire.MsgBlock) {
	hash := b.BlockHash()
	var bb gcs.BasicBuilder
	if err := gcs.AddBasicElements(&bb, b, nil); err != nil {
		panic(err)
	}
	filter := bb.AppendFilter(nil, hash)
	prev := chainhash.Hash{}
	if len(c.filterHeaders) > 0 {
		prev = c.filterHeaders[len(c.filterHeaders)-1]
	}
	c.headers = append(c.headers, b.Header)
	c.hashes = append(c.hashes, hash)
	c.filters = append(c.filters, filter)
	c.filterHeaders = append(c.filterHeaders, headers.FilterHeader(filter, prev))
}

// ranges returns the chain's whole ranges as a publisher writes them.
func (c *testChain) ranges(t testing.TB) []layouttest.Range {
	var out []layouttest.Range
	for start := 0; start+layouttest.RangeSize <= len(c.headers); start += layouttest.RangeSize {
		r := layouttest.Range{Start: uint32(start)}
		var hb bytes.Buffer
		for h := start; h < start+layouttest.RangeSize; h++ {
			if err := c.headers[h].Serialize(&hb); err != nil {
				t.Fatal(err)
			}
			r.FilterHeaders = append(r.FilterHeaders, c.filterHeaders[h][:]...)
			r.Filters = wirescan.AppendCompactSize(r.Filters, uint64(len(c.filters[h])))
			r.Filters = append(r.Filters, c.filters[h]...)
		}
		r.Headers = hb.Bytes()
		out = append(out, r)
	}
	return out
}

func openStore(t testing.TB, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, "cfindexd.db"), *chaincfg.RegressionNetParams.GenesisHash, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// checkStoreHolds checks that the store's active chain is c's up to tip,
// header, filter and filter header.
func checkStoreHolds(t testing.TB, st *store.Store, c *testChain, tip uint32) {
	t.Helper()
	got, ok := st.Tip()
	if !ok || got.Height != tip || got.Hash != c.hashes[tip] || got.FilterHeader != c.filterHeaders[tip] {
		t.Fatalf("store tip %d %s (ok %v), want %d %s", got.Height, got.Hash, ok, tip, c.hashes[tip])
	}
	for start := uint32(0); start <= tip; start += store.MaxRange {
		end := min(start+store.MaxRange-1, tip)
		recs, err := st.FiltersByHeight(start, end)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Hash != c.hashes[r.Height] || r.Header != c.headers[r.Height] || !bytes.Equal(r.Filter, c.filters[r.Height]) || r.FilterHeader != c.filterHeaders[r.Height] {
				t.Fatalf("height %d: the store holds another block or filter", r.Height)
			}
		}
	}
}
