package store

import (
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// HashAt returns the hash of the active block at height, or ErrNotFound.
func (s *Store) HashAt(height uint32) (chainhash.Hash, error) {
	var hash chainhash.Hash
	err := s.view(func(b *buckets) error {
		v := b.headers.Get(heightKey(height))
		if v == nil {
			return b.missing("hash", height)
		}
		var err error
		hash, _, err = decodeHeaderValue(v)
		return err
	})
	return hash, err
}

// HeightOf returns the height of the block hash and whether it is on the
// active chain (false: it is in the stale set), or ErrNotFound.
func (s *Store) HeightOf(hash chainhash.Hash) (uint32, bool, error) {
	var (
		height uint32
		active bool
	)
	err := s.view(func(b *buckets) error {
		h, ok, err := b.activeHeight(hash)
		if err != nil || ok {
			height, active = h, ok
			return err
		}
		v := b.stale.Get(hash[:])
		if v == nil {
			return fmt.Errorf("height of %s: %w", hash, ErrNotFound)
		}
		height, _, err = stalePrevAndHeight(hash, v)
		return err
	})
	return height, active, err
}

// HeaderAt returns the header of the active block at height, or
// ErrNotFound.
func (s *Store) HeaderAt(height uint32) (wire.BlockHeader, error) {
	var hdr wire.BlockHeader
	err := s.view(func(b *buckets) error {
		v := b.headers.Get(heightKey(height))
		if v == nil {
			return b.missing("header", height)
		}
		var err error
		_, hdr, err = decodeHeaderValue(v)
		return err
	})
	return hdr, err
}

// HeaderByHash returns the header and height of the block hash, on the
// active chain or in the stale set, or ErrNotFound.
func (s *Store) HeaderByHash(hash chainhash.Hash) (wire.BlockHeader, uint32, error) {
	var (
		hdr    wire.BlockHeader
		height uint32
	)
	err := s.view(func(b *buckets) error {
		h, ok, err := b.activeHeight(hash)
		if err != nil {
			return err
		}
		if ok {
			v := b.headers.Get(heightKey(h))
			if v == nil {
				return fmt.Errorf("%w: %s indexed at height %d which has no header", ErrCorrupt, hash, h)
			}
			height = h
			_, hdr, err = decodeHeaderValue(v)
			return err
		}
		v := b.stale.Get(hash[:])
		if v == nil {
			return fmt.Errorf("header of %s: %w", hash, ErrNotFound)
		}
		r, err := decodeStale(hash, v)
		hdr, height = r.Header, r.Height
		return err
	})
	return hdr, height, err
}

// Headers returns the active headers at heights start..end inclusive, in
// one read transaction. It fails with ErrBadRange if start > end,
// ErrRangeTooLarge beyond MaxRange heights, and ErrNotFound if end is above
// the tip.
func (s *Store) Headers(start, end uint32) ([]wire.BlockHeader, error) {
	if err := checkRange(start, end); err != nil {
		return nil, fmt.Errorf("headers %d..%d: %w", start, end, err)
	}
	out := make([]wire.BlockHeader, end-start+1)
	err := s.view(func(b *buckets) error {
		c := b.headers.Cursor()
		k, v := c.Seek(heightKey(start))
		for i := range out {
			if i > 0 {
				k, v = c.Next()
			}
			if k == nil || !isHeight(k, start+uint32(i)) {
				return b.missing("header", start+uint32(i))
			}
			var err error
			if _, out[i], err = decodeHeaderValue(v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("headers %d..%d: %w", start, end, err)
	}
	return out, nil
}
