package httpapi

import (
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/store"
)

// The tests that serve from a real store read it through this adapter,
// the tests' copy of the daemon's (cmd/cfindexd/httpviews.go).

// storeReader is what *store.Store and *store.Snapshot both read.
type storeReader interface {
	Tip() (store.Tip, bool)
	HashAt(height uint32) (chainhash.Hash, error)
	HeightOf(hash chainhash.Hash) (uint32, bool, error)
	HeaderAt(height uint32) (wire.BlockHeader, error)
	Headers(start, end uint32) ([]wire.BlockHeader, error)
	FilterByHash(hash chainhash.Hash) (store.BlockRecord, bool, error)
	FiltersByHeight(start, end uint32) ([]store.BlockRecord, error)
	FilterHeadersByHeight(start, end uint32) ([]chainhash.Hash, error)
}

type storeChainReader struct{ r storeReader }

type storeView struct {
	storeChainReader
	st *store.Store
}

func newStoreView(st *store.Store) ChainView { return storeView{storeChainReader{st}, st} }

func (v storeView) Read(fn func(ChainReader) error) error {
	return v.st.Read(func(s *store.Snapshot) error { return fn(storeChainReader{s}) })
}

func (v storeView) SizeBytes() int64 { return v.st.SizeBytes() }

func notFound(err error) error {
	if err != nil && errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}

func (v storeChainReader) Tip() (Tip, bool) { t, ok := v.r.Tip(); return Tip(t), ok }

func (v storeChainReader) HashAt(height uint32) (chainhash.Hash, error) {
	h, err := v.r.HashAt(height)
	return h, notFound(err)
}

func (v storeChainReader) HeightOf(hash chainhash.Hash) (uint32, bool, error) {
	h, active, err := v.r.HeightOf(hash)
	return h, active, notFound(err)
}

func (v storeChainReader) HeaderAt(height uint32) (wire.BlockHeader, error) {
	h, err := v.r.HeaderAt(height)
	return h, notFound(err)
}

func (v storeChainReader) Headers(start, end uint32) ([]wire.BlockHeader, error) {
	hs, err := v.r.Headers(start, end)
	return hs, notFound(err)
}

func (v storeChainReader) FilterByHash(hash chainhash.Hash) (BlockRecord, bool, error) {
	rec, active, err := v.r.FilterByHash(hash)
	return fromStore(rec), active, notFound(err)
}

// fromStore is the part of a store record httpapi serves.
func fromStore(r store.BlockRecord) BlockRecord {
	return BlockRecord{Height: r.Height, Hash: r.Hash, Header: r.Header, Filter: r.Filter, FilterHeader: r.FilterHeader, FilterHash: r.FilterHash}
}

func (v storeChainReader) FiltersByHeight(start, end uint32) ([]BlockRecord, error) {
	recs, err := v.r.FiltersByHeight(start, end)
	out := make([]BlockRecord, len(recs))
	for i, r := range recs {
		out[i] = fromStore(r)
	}
	return out, notFound(err)
}

func (v storeChainReader) FilterHeadersByHeight(start, end uint32) ([]chainhash.Hash, error) {
	fhs, err := v.r.FilterHeadersByHeight(start, end)
	return fhs, notFound(err)
}

// storeRecords converts records to the store's, to commit them.
func storeRecords(recs []BlockRecord) []store.BlockRecord {
	out := make([]store.BlockRecord, len(recs))
	for i, r := range recs {
		out[i] = store.BlockRecord{Height: r.Height, Hash: r.Hash, Header: r.Header, Filter: r.Filter, FilterHeader: r.FilterHeader, FilterHash: r.FilterHash}
	}
	return out
}
