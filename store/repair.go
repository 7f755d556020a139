package store

import (
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/wireframe"
)

// Repair rewrites the filter, filter header, filter hash and cfilter
// checksum of the active block hash at height with filter, a filter the
// caller rebuilt from the block, once it fits the stored filter-header
// chain: the filter header it makes with the header below (the zero hash
// below genesis) must be the one the header above chains from (the tip's
// filter header at the tip). So a rebuilt filter that differs from the one
// committed is refused (ErrFilterHeaderMismatch), and a damaged filter
// header is rebuilt from its neighbours. The block at height must still be
// hash (ErrNotFound otherwise), and the neighbours' values must pass their
// own checks (a *MismatchError names the one that does not: repair it
// first). Values of the height that are intact are rewritten unchanged.
func (s *Store) Repair(height uint32, hash chainhash.Hash, filter []byte) error {
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
		hv := b.headers.Get(k)
		if !ok || height > tip.Height || len(hv) < hashLen || chainhash.Hash(hv[:hashLen]) != hash {
			return fmt.Errorf("block %s at height %d: %w", hash, height, ErrNotFound)
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
