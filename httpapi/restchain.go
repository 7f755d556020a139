package httpapi

import (
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/httpapi/corerest"
)

// restChain is the server's view as the Core REST endpoints read it
// (corerest.Chain): what the view does not hold (ErrNotFound) is "not
// found", and each list from a block upward is read from one state.
type restChain struct{ view ChainView }

var _ corerest.Chain = restChain{}

// Filter implements corerest.Chain.
func (c restChain) Filter(hash chainhash.Hash) ([]byte, bool, error) {
	rec, _, err := c.view.FilterByHash(hash)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	return rec.Filter, err == nil, err
}

// HashAt implements corerest.Chain.
func (c restChain) HashAt(height uint32) (chainhash.Hash, bool, error) {
	hash, err := c.view.HashAt(height)
	if errors.Is(err, ErrNotFound) {
		return chainhash.Hash{}, false, nil
	}
	return hash, err == nil, err
}

// FilterHeadersFrom implements corerest.Chain.
func (c restChain) FilterHeadersFrom(hash chainhash.Hash, count int) (fhs []chainhash.Hash, err error) {
	err = c.view.Read(func(r ChainReader) (err error) {
		fhs, err = activeFrom(r, hash, count, r.FilterHeadersByHeight)
		return err
	})
	return fhs, err
}

// HeadersFrom implements corerest.Chain.
func (c restChain) HeadersFrom(hash chainhash.Hash, count int) (hs []wire.BlockHeader, err error) {
	err = c.view.Read(func(r ChainReader) (err error) {
		hs, err = activeFrom(r, hash, count, r.Headers)
		return err
	})
	return hs, err
}

// activeFrom reads with read the active chain from the block hash upward,
// at most count heights, all from the one state r reads. A hash that is
// unknown or not on the active chain gives nothing, as in Core.
func activeFrom[T any](r ChainReader, hash chainhash.Hash, count int, read func(start, end uint32) ([]T, error)) ([]T, error) {
	height, active, err := r.HeightOf(hash)
	if errors.Is(err, ErrNotFound) || (err == nil && !active) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	tip, ok := r.Tip()
	if !ok || tip.Height < height {
		return nil, fmt.Errorf("active block %s at height %d above the tip %d (have tip %v)", hash, height, tip.Height, ok)
	}
	end := min(uint64(height)+uint64(count)-1, uint64(tip.Height))
	return read(height, uint32(end))
}
