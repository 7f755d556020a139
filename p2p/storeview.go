package p2p

import (
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/wireframe"
)

// storeView adapts *store.Store to ChainView: it converts the store's
// records to this package's and its ErrNotFound to p2p.ErrNotFound.
type storeView struct{ s *store.Store }

var _ ChainView = storeView{}

// NewStoreView returns s as a ChainView. The store shows only committed
// blocks, which is what makes announcements wait for the filter.
func NewStoreView(s *store.Store) ChainView { return storeView{s} }

// notFound maps the store's ErrNotFound onto ErrNotFound, keeping the
// store's message for logs.
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
