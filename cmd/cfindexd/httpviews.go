package main

import (
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/httpapi"
	"github.com/cfindexd/cfindexd/store"
)

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

var (
	_ storeReader = (*store.Store)(nil)
	_ storeReader = (*store.Snapshot)(nil)
)

// httpReader adapts a store reader to httpapi.ChainReader: it converts the
// store's tip and records to httpapi's and its ErrNotFound to
// httpapi.ErrNotFound.
type httpReader struct{ r storeReader }

// httpView adapts *store.Store to httpapi.ChainView; Read is one store
// snapshot.
type httpView struct {
	httpReader
	st *store.Store
}

var _ httpapi.ChainView = httpView{}

// newHTTPView returns st as the HTTP server's view of the chain.
func newHTTPView(st *store.Store) httpView { return httpView{httpReader{st}, st} }

// Read implements httpapi.ChainView with one store snapshot.
func (v httpView) Read(fn func(httpapi.ChainReader) error) error {
	return v.st.Read(func(s *store.Snapshot) error { return fn(httpReader{s}) })
}

// SizeBytes implements httpapi.ChainView.
func (v httpView) SizeBytes() int64 { return v.st.SizeBytes() }

// httpNotFound maps the store's ErrNotFound onto httpapi.ErrNotFound,
// keeping the store's message for logs. A value failing its checksum is
// not found too: answered as Core answers for a block it lacks, until it
// is repaired (storecheck.Repairer).
func httpNotFound(err error) error {
	if err != nil && (errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrChecksumMismatch)) {
		return fmt.Errorf("%w: %w", httpapi.ErrNotFound, err)
	}
	return err
}

func (v httpReader) Tip() (httpapi.Tip, bool) {
	t, ok := v.r.Tip()
	return httpapi.Tip(t), ok
}

func (v httpReader) HashAt(height uint32) (chainhash.Hash, error) {
	h, err := v.r.HashAt(height)
	return h, httpNotFound(err)
}

func (v httpReader) HeightOf(hash chainhash.Hash) (uint32, bool, error) {
	h, active, err := v.r.HeightOf(hash)
	return h, active, httpNotFound(err)
}

func (v httpReader) HeaderAt(height uint32) (wire.BlockHeader, error) {
	h, err := v.r.HeaderAt(height)
	return h, httpNotFound(err)
}

func (v httpReader) Headers(start, end uint32) ([]wire.BlockHeader, error) {
	hs, err := headersBefore(v.r, start, end)
	return hs, httpNotFound(err)
}

func (v httpReader) FilterByHash(hash chainhash.Hash) (httpapi.BlockRecord, bool, error) {
	rec, active, err := v.r.FilterByHash(hash)
	return httpRecord(rec), active, httpNotFound(err)
}

func (v httpReader) FiltersByHeight(start, end uint32) ([]httpapi.BlockRecord, error) {
	recs, err := v.r.FiltersByHeight(start, end)
	if err != nil {
		return nil, httpNotFound(err)
	}
	out := make([]httpapi.BlockRecord, len(recs))
	for i, r := range recs {
		out[i] = httpRecord(r)
	}
	return out, nil
}

// httpRecord is the part of a store record httpapi serves (not its
// silent-payment entry, which reads never fill in).
func httpRecord(r store.BlockRecord) httpapi.BlockRecord {
	return httpapi.BlockRecord{Height: r.Height, Hash: r.Hash, Header: r.Header, Filter: r.Filter, FilterHeader: r.FilterHeader, FilterHash: r.FilterHash}
}

func (v httpReader) FilterHeadersByHeight(start, end uint32) ([]chainhash.Hash, error) {
	fhs, err := v.r.FilterHeadersByHeight(start, end)
	return fhs, httpNotFound(err)
}
