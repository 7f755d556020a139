package main

import (
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p"
	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/wireframe"
)

// storeView adapts *store.Store to p2p.ChainView: it converts the store's
// records to p2p's, its ErrNotFound to p2p.ErrNotFound and its ErrCorrupt
// to p2p.ErrCorrupt.
type storeView struct{ s *store.Store }

var _ p2p.ChainView = storeView{}

// newStoreView returns s as a p2p.ChainView. The store shows only
// committed blocks, which is what makes announcements wait for the filter.
func newStoreView(s *store.Store) p2p.ChainView { return storeView{s} }

// viewErr maps the store's ErrNotFound onto p2p.ErrNotFound and its
// ErrCorrupt onto p2p.ErrCorrupt, keeping the store's message for logs. A
// value failing its checksum is not found too: peers are answered as for
// a block not known yet, until it is repaired (storecheck.Repairer).
func viewErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrChecksumMismatch):
		return fmt.Errorf("%w: %w", p2p.ErrNotFound, err)
	case errors.Is(err, store.ErrCorrupt):
		return corruptErr{err}
	}
	return err
}

// corruptErr is a store error that is also p2p.ErrCorrupt, with the
// store's message unchanged (it carries the hint to reindex).
type corruptErr struct{ error }

func (e corruptErr) Unwrap() error { return e.error }

func (e corruptErr) Is(target error) bool { return target == p2p.ErrCorrupt }

func (v storeView) Tip() (p2p.Tip, bool) {
	t, ok := v.s.Tip()
	return p2p.Tip{Height: t.Height, Hash: t.Hash}, ok
}

func (v storeView) TipChanged() <-chan struct{} { return v.s.TipChanged() }

func (v storeView) HeightOf(hash chainhash.Hash) (uint32, bool, error) {
	h, active, err := v.s.HeightOf(hash)
	return h, active, viewErr(err)
}

func (v storeView) HeaderByHash(hash chainhash.Hash) (wire.BlockHeader, uint32, error) {
	hdr, h, err := v.s.HeaderByHash(hash)
	return hdr, h, viewErr(err)
}

func (v storeView) Headers(start, end uint32) ([]wire.BlockHeader, error) {
	hs, err := headersBefore(v.s, start, end)
	return hs, viewErr(err)
}

// headersBefore reads the active headers start..end from r, or, when one
// of them is damaged (a value failing its checksum), those below it: an
// answer stops before a block it cannot serve, as before a block not
// known yet.
func headersBefore(r storeReader, start, end uint32) ([]wire.BlockHeader, error) {
	hs, err := r.Headers(start, end)
	m, ok := store.AsMismatch(err)
	if !ok || m.Stale || m.HeightIndex || m.Height < start || m.Height > end {
		return hs, err
	}
	if m.Height == start {
		return []wire.BlockHeader{}, nil
	}
	return r.Headers(start, m.Height-1)
}

func (v storeView) AppendBlockHashes(dst []chainhash.Hash, stop chainhash.Hash, start uint32) ([]chainhash.Hash, error) {
	hs, err := v.s.AppendBlockHashesForStop(dst, stop, start)
	return hs, viewErr(err)
}

func (v storeView) EachFilter(start uint32, hashes []chainhash.Hash, fn func(i int, filter []byte, checksum [4]byte) (bool, error)) (int, error) {
	n, err := v.s.EachFilter(start, hashes, func(i int, filter []byte, sum wireframe.Checksum) (bool, error) {
		return fn(i, filter, sum)
	})
	return n, viewErr(err)
}

func (v storeView) AppendFilterHashes(dst []byte, stop chainhash.Hash, start uint32) (chainhash.Hash, []byte, error) {
	prev, out, err := v.s.AppendFilterHashesForStop(dst, stop, start)
	return prev, out, viewErr(err)
}

func (v storeView) FilterHeaderCheckpoints(stop chainhash.Hash, interval uint32) ([]chainhash.Hash, error) {
	hs, err := v.s.FilterHeaderCheckpoints(stop, interval)
	return hs, viewErr(err)
}
