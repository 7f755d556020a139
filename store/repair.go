package store

import (
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/wireframe"
)

// Repair rewrites the block header, filter, filter header, filter hash
// and cfilter checksum of the active block at height with header and
// filter, which the caller fetched and rebuilt from the node, once they
// fit the stored chains. The header must be the one the chain names at
// height (ChainedHashAt: the block above links to it, or it is the tip)
// and link to the block below (ErrNotFound otherwise). The filter must fit
// the stored filter-header chain: the filter header it makes with the header below (the zero hash
// below genesis) must be the one the header above chains from (the tip's
// filter header at the tip). So a rebuilt filter that differs from the one
// committed is refused (ErrFilterHeaderMismatch), and a damaged filter
// header is rebuilt from its neighbours. The neighbours' values must pass
// their own checks (a *MismatchError names the one that does not: repair
// it first). Values of the height that are intact are rewritten unchanged.
func (s *Store) Repair(height uint32, header wire.BlockHeader, filter []byte) error {
	hash := header.BlockHash()
	if len(filter) == 0 || len(filter) > MaxFilterSize {
		return fmt.Errorf("repair height %d: %w: filter of %d bytes", height, ErrInvalidRecord, len(filter))
	}
	filterHash := headers.FilterHash(filter)
	var ck wireframe.CFilterHasher
	sum := ck.Sum(&hash, filter)

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	err := s.update(func(b *buckets) error {
		tip, ok, err := b.readTip()
		if err != nil {
			return err
		}
		k := heightKey(height)
		if !ok || height > tip.Height {
			return fmt.Errorf("block %s at height %d: %w", hash, height, ErrNotFound)
		}
		if err := b.checkRepairHeader(tip, height, hash, &header, s.genesis); err != nil {
			return err
		}
		var prev chainhash.Hash
		if height > 0 {
			if prev, _, err = b.filterHeaderAt(height-1, b.filterHeaders.Get(heightKey(height-1))); err != nil {
				return err
			}
		}
		want := headers.FilterHeaderFromHash(filterHash, prev)
		next := tip.FilterHeader
		if height < tip.Height {
			nfh, nfhash, err := b.filterHeaderAt(height+1, b.filterHeaders.Get(heightKey(height+1)))
			if err != nil {
				return err
			}
			if headers.FilterHeaderFromHash(nfhash, want) != nfh {
				return fmt.Errorf("%w: the rebuilt filter makes filter header %s, which the header above does not chain from", ErrFilterHeaderMismatch, want)
			}
		} else if want != next {
			return fmt.Errorf("%w: the rebuilt filter makes filter header %s, the tip's is %s", ErrFilterHeaderMismatch, want, next)
		}
		hv := make([]byte, headerValueLen)
		copy(hv, hash[:])
		putHeader(hv[hashLen:], &header)
		putHeaderCRC(hv, height)
		if err := b.headers.Put(k, hv); err != nil {
			return fmt.Errorf("put header: %w", err)
		}
		if err := b.heights.Put(hash[:], k); err != nil {
			return fmt.Errorf("put height: %w", err)
		}
		if err := b.filters.Put(k, filter); err != nil {
			return fmt.Errorf("put filter: %w", err)
		}
		if err := b.filterHeaders.Put(k, filterHeaderValue(height, &want, &filterHash)); err != nil {
			return fmt.Errorf("put filter header: %w", err)
		}
		if err := b.checksums.Put(k, checksumValue(height, sum, filter)); err != nil {
			return fmt.Errorf("put checksum: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("repair height %d: %w", height, err)
	}
	return nil
}

// checkRepairHeader checks that header, whose hash is hash, is the block
// the chain names at height below tip and links to the block below it.
func (b *buckets) checkRepairHeader(tip Tip, height uint32, hash chainhash.Hash, header *wire.BlockHeader, genesis chainhash.Hash) error {
	want, err := b.chainedHash(tip, height)
	if err != nil {
		return err
	}
	if want != hash {
		return fmt.Errorf("block %s at height %d (the chain names %s): %w", hash, height, want, ErrNotFound)
	}
	if height == 0 {
		return nil
	}
	below, _, err := b.headerAt(height-1, b.headers.Get(heightKey(height-1)))
	if err != nil {
		return err
	}
	if header.PrevBlock != below {
		return fmt.Errorf("block %s at height %d links to %s, not %s below it: %w", hash, height, header.PrevBlock, below, ErrNotFound)
	}
	return nil
}

// chainedHash returns the hash the chain names at active height h: the
// parent of the block above (its header checked), or the tip's.
func (b *buckets) chainedHash(tip Tip, h uint32) (chainhash.Hash, error) {
	if h == tip.Height {
		return tip.Hash, nil
	}
	_, raw, err := b.headerAt(h+1, b.headers.Get(heightKey(h+1)))
	if err != nil {
		return chainhash.Hash{}, err
	}
	return decodeHeader(raw).PrevBlock, nil
}

// ChainedHashAt returns the hash of the active block at height as the
// chain names it, without reading that block's own value: the parent of
// the block above, or the tip's hash. It names a block whose stored hash
// or header is damaged, so that it can be fetched again (Repair); it
// fails with ErrNotFound above the tip.
func (s *Store) ChainedHashAt(height uint32) (chainhash.Hash, error) {
	var hash chainhash.Hash
	err := s.view(func(b *buckets) error {
		tip, ok, err := b.readTip()
		if err != nil {
			return err
		}
		if !ok || height > tip.Height {
			return fmt.Errorf("height %d: %w", height, ErrNotFound)
		}
		hash, err = b.chainedHash(tip, height)
		return err
	})
	return hash, err
}

// RepairHeightIndex rewrites the height index entry of the block hash
// (block hash -> height) that fails its check (MismatchError.HeightIndex):
// it finds the height whose stored block hash, its CRC checked, is hash
// and points the entry there, or deletes the entry when no active height
// holds hash. It reads and checks every active header once (damage is
// rare), and fails with the *MismatchError of a damaged one.
func (s *Store) RepairHeightIndex(hash chainhash.Hash) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	err := s.update(func(b *buckets) error {
		c := b.headers.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			h, err := decodeHeight(k)
			if err != nil {
				return err
			}
			// A damaged hash could be the one sought: repair it first.
			got, _, err := b.headerAt(h, v)
			if err != nil {
				return err
			}
			if got == hash {
				return b.heights.Put(hash[:], k)
			}
		}
		return b.heights.Delete(hash[:])
	})
	if err != nil {
		return fmt.Errorf("repair the height index of %s: %w", hash, err)
	}
	return nil
}
