package main

import (
	"encoding/hex"
	"errors"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/httpapi"
	"github.com/cfindexd/cfindexd/store"
)

// TestHTTPView reads a store holding the regtest genesis through the HTTP
// server's view: the tip, records and filter headers come through, and
// what the store does not hold is httpapi.ErrNotFound, directly and in a
// snapshot.
func TestHTTPView(t *testing.T) {
	if httpapi.MaxRange != store.MaxRange {
		t.Fatalf("httpapi.MaxRange %d, store.MaxRange %d", httpapi.MaxRange, store.MaxRange)
	}
	p := chaincfg.RegressionNetParams
	st, err := store.Open(filepath.Join(t.TempDir(), "filters.db"), *p.GenesisHash, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	filter, _ := hex.DecodeString("014756c0") // regtest genesis basic filter
	fh := headers.FilterHeader(filter, chainhash.Hash{})
	if err := st.CommitBatch([]store.BlockRecord{{Hash: *p.GenesisHash, Header: p.GenesisBlock.Header, Filter: filter, FilterHeader: fh}}); err != nil {
		t.Fatal(err)
	}
	v := newHTTPView(st)
	if tip, ok := v.Tip(); !ok || tip != (httpapi.Tip{Height: 0, Hash: *p.GenesisHash, FilterHeader: fh}) {
		t.Errorf("tip %+v %v", tip, ok)
	}
	if v.SizeBytes() <= 0 {
		t.Errorf("size %d", v.SizeBytes())
	}
	err = v.Read(func(r httpapi.ChainReader) error {
		recs, err := r.FiltersByHeight(0, 0)
		if err != nil || len(recs) != 1 || recs[0].Hash != *p.GenesisHash || string(recs[0].Filter) != string(filter) {
			t.Errorf("filters at 0: %+v %v", recs, err)
		}
		if rec, active, err := r.FilterByHash(*p.GenesisHash); err != nil || !active || rec.FilterHeader != fh {
			t.Errorf("filter of genesis: %+v %v %v", rec, active, err)
		}
		if fhs, err := r.FilterHeadersByHeight(0, 0); err != nil || len(fhs) != 1 || fhs[0] != fh {
			t.Errorf("filter headers at 0: %v %v", fhs, err)
		}
		_, err = r.HashAt(1)
		return err
	})
	if !errors.Is(err, httpapi.ErrNotFound) {
		t.Errorf("hash at 1 in a snapshot: %v, want httpapi.ErrNotFound", err)
	}
	if _, _, err := v.HeightOf(chainhash.Hash{1}); !errors.Is(err, httpapi.ErrNotFound) {
		t.Errorf("height of an unknown hash: %v", err)
	}
	if _, err := v.HeaderAt(1); !errors.Is(err, httpapi.ErrNotFound) {
		t.Errorf("header at 1: %v", err)
	}
}
