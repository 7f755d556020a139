package store

import (
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// HashAt returns the hash of the active block at height, or ErrNotFound.
func (s *Store) HashAt(height uint32) (chainhash.Hash, error) {
	var hash chainhash.Hash
	err := s.Read(func(v *Snapshot) (err error) {
		hash, err = v.HashAt(height)
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
	err := s.Read(func(v *Snapshot) (err error) {
		height, active, err = v.HeightOf(hash)
		return err
	})
	return height, active, err
}

// HeaderAt returns the header of the active block at height, or
// ErrNotFound.
func (s *Store) HeaderAt(height uint32) (wire.BlockHeader, error) {
	var hdr wire.BlockHeader
	err := s.Read(func(v *Snapshot) (err error) {
		hdr, err = v.HeaderAt(height)
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
			_, hdr, err = b.decodeHeaderAt(h, v)
			return err
		}
		v := b.stale.Get(hash[:])
		if v == nil {
			return fmt.Errorf("header of %s: %w", hash, ErrNotFound)
		}
		r, _, err := decodeStale(hash, v)
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
	var out []wire.BlockHeader
	err := s.Read(func(v *Snapshot) (err error) {
		out, err = v.Headers(start, end)
		return err
	})
	return out, err
}

// StaleHashes returns the hashes of the blocks in the stale set (the
// blocks reorgs disconnected), in byte order, so that whole-store checks
// can read each (FilterByHash); a reorg keeps a few per fork.
func (s *Store) StaleHashes() ([]chainhash.Hash, error) {
	var out []chainhash.Hash
	err := s.view(func(b *buckets) error {
		return b.stale.ForEach(func(k, _ []byte) error {
			if len(k) != hashLen {
				return fmt.Errorf("%w: stale key of %d bytes", ErrCorrupt, len(k))
			}
			out = append(out, chainhash.Hash(k))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("stale hashes: %w", err)
	}
	return out, nil
}
