package store

import (
	"fmt"
	"slices"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// FiltersForStop returns the records at heights start..h ascending, where h
// is the height of the block stop, along the chain that ends at stop: the
// active chain if stop is active, else stop's stale branch back to where it
// forks from the active chain, then the active chain below the fork. This
// is the range a getcfilters message names; Core answers for stale blocks
// too. It reads in one transaction and fails with ErrNotFound for an
// unknown stop, ErrBadRange if start > h and ErrRangeTooLarge beyond
// MaxRange heights. The filters of one call share one backing array.
func (s *Store) FiltersForStop(stop chainhash.Hash, start uint32) ([]BlockRecord, error) {
	var recs []BlockRecord
	err := s.view(func(b *buckets) error {
		p, err := b.planForStop(stop, start)
		if err != nil {
			return err
		}
		recs = make([]BlockRecord, p.stopHeight-start+1)
		nActive := len(recs) - len(p.stale)
		if err := b.scanActive(start, recs[:nActive]); err != nil {
			return err
		}
		for i, st := range p.stale {
			// p.stale is highest first; recs is ascending.
			r, _, err := decodeStale(st.hash, st.value)
			if err != nil {
				return err
			}
			recs[len(recs)-1-i] = r
		}
		detach(recs)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("filters from %d to stop %s: %w", start, stop, err)
	}
	return recs, nil
}

// FilterHeadersForStop returns the filter headers at heights start..h of the
// chain ending at stop, like FiltersForStop (the range a getcfheaders
// message names), with the same errors.
func (s *Store) FilterHeadersForStop(stop chainhash.Hash, start uint32) ([]chainhash.Hash, error) {
	var out []chainhash.Hash
	err := s.view(func(b *buckets) error {
		p, err := b.planForStop(stop, start)
		if err != nil {
			return err
		}
		out = make([]chainhash.Hash, p.stopHeight-start+1)
		nActive := len(out) - len(p.stale)
		if err := b.scanFilterHeaders(start, out[:nActive]); err != nil {
			return err
		}
		for i, st := range p.stale {
			r, _, err := decodeStale(st.hash, st.value)
			if err != nil {
				return err
			}
			out[len(out)-1-i] = r.FilterHeader
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("filter headers from %d to stop %s: %w", start, stop, err)
	}
	return out, nil
}

// FilterHashesForStop returns what a cfheaders message answering
// getcfheaders(start, stop) carries: prevHeader, the filter header of the
// block at start-1 on the chain ending at stop (the zero hash for start 0),
// and the filter hashes (dSHA256 of each filter) at heights start..h of that
// chain, ascending. It reads the stored filter hashes, never a filter, in
// one transaction, and fails like FiltersForStop (ErrNotFound, ErrBadRange,
// ErrRangeTooLarge beyond MaxRange hashes).
func (s *Store) FilterHashesForStop(stop chainhash.Hash, start uint32) (prevHeader chainhash.Hash, hashes []chainhash.Hash, err error) {
	prevHeader, raw, err := s.AppendFilterHashesForStop(nil, stop, start)
	if err != nil {
		return chainhash.Hash{}, nil, err
	}
	hashes = make([]chainhash.Hash, len(raw)/hashLen)
	for i := range hashes {
		hashes[i] = chainhash.Hash(raw[i*hashLen:])
	}
	return prevHeader, hashes, nil
}

// AppendFilterHashesForStop is FilterHashesForStop appending the filter
// hashes to dst, 32 bytes each in internal byte order, instead of
// returning a slice of them: a server writes them straight into the
// cfheaders frame it builds. On error it returns dst unchanged.
func (s *Store) AppendFilterHashesForStop(dst []byte, stop chainhash.Hash, start uint32) (prevHeader chainhash.Hash, out []byte, err error) {
	err = s.view(func(b *buckets) error {
		p, err := b.planForStop(stop, start)
		if err != nil {
			return err
		}
		n := int(p.stopHeight-start) + 1
		nActive := n - len(p.stale)
		out = slices.Grow(dst, n*hashLen)
		if nActive > 0 {
			// One cursor from start-1 (the previous header), then the
			// hashes, appended straight from the stored values.
			from := start
			if start > 0 {
				from = start - 1
			}
			err := eachHeight(b.filterHeaders, from, int(start-from)+nActive, b.missingFilterHeader, func(h uint32, v []byte) error {
				fh, fhash, err := b.filterHeaderAt(h, v)
				if err != nil {
					return err
				}
				if h < start {
					prevHeader = fh
				} else {
					out = append(out, fhash[:]...)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		// p.stale is highest first; the answer is ascending.
		for i := len(p.stale) - 1; i >= 0; i-- {
			st := p.stale[i]
			r, _, err := decodeStale(st.hash, st.value)
			if err != nil {
				return err
			}
			out = append(out, r.FilterHash[:]...)
		}
		if nActive == 0 && start > 0 {
			// The whole range is stale; the previous header is that of the
			// lowest stale block's parent, active or stale.
			lowest := p.stale[len(p.stale)-1]
			_, parent, err := stalePrevAndHeight(lowest.hash, lowest.value)
			if err != nil {
				return err
			}
			prevHeader, err = b.filterHeaderOf(parent, start-1)
			return err
		}
		return nil
	})
	if err != nil {
		return chainhash.Hash{}, dst, fmt.Errorf("filter hashes from %d to stop %s: %w", start, stop, err)
	}
	return prevHeader, out, nil
}

// filterHeaderOf returns the filter header of the block hash, active or
// stale, which the caller knows to be at height (a parent link); a block
// missing or at another height means the file is corrupt.
func (b *buckets) filterHeaderOf(hash chainhash.Hash, height uint32) (chainhash.Hash, error) {
	h, active, err := b.activeHeight(hash)
	if err != nil {
		return chainhash.Hash{}, err
	}
	if active {
		if h != height {
			return chainhash.Hash{}, fmt.Errorf("%w: block %s expected at height %d is active at %d", ErrCorrupt, hash, height, h)
		}
		fh, _, err := b.filterHeaderAt(h, b.filterHeaders.Get(heightKey(h)))
		if err != nil {
			return chainhash.Hash{}, err
		}
		return fh, nil
	}
	v := b.stale.Get(hash[:])
	if v == nil {
		return chainhash.Hash{}, fmt.Errorf("%w: block %s expected at height %d is neither active nor stale", ErrCorrupt, hash, height)
	}
	r, _, err := decodeStale(hash, v)
	if err != nil {
		return chainhash.Hash{}, err
	}
	if r.Height != height {
		return chainhash.Hash{}, fmt.Errorf("%w: block %s expected at height %d is stale at %d", ErrCorrupt, hash, height, r.Height)
	}
	return r.FilterHeader, nil
}

// stopPlan says where the blocks of start..stopHeight on the chain ending at
// a stop hash live: the stale entries (highest first, values aliasing bbolt
// memory) cover the top of the range and the active chain the rest.
type stopPlan struct {
	stopHeight uint32
	stale      []staleEntry
}

type staleEntry struct {
	hash  chainhash.Hash
	value []byte
}

// planForStop locates stop and, for a stale stop, walks its branch back by
// PrevBlock through the stale set until it reaches start or a block of the
// active chain. The walk visits at most MaxRange blocks.
func (b *buckets) planForStop(stop chainhash.Hash, start uint32) (stopPlan, error) {
	h, active, err := b.activeHeight(stop)
	if err != nil {
		return stopPlan{}, err
	}
	if active {
		if err := checkRange(start, h); err != nil {
			return stopPlan{}, err
		}
		return stopPlan{stopHeight: h}, nil
	}
	v := b.stale.Get(stop[:])
	if v == nil {
		return stopPlan{}, fmt.Errorf("stop %s: %w", stop, ErrNotFound)
	}
	h, prev, err := stalePrevAndHeight(stop, v)
	if err != nil {
		return stopPlan{}, err
	}
	if err := checkRange(start, h); err != nil {
		return stopPlan{}, err
	}
	p := stopPlan{stopHeight: h}
	cur, curHeight := stop, h
	for {
		p.stale = append(p.stale, staleEntry{hash: cur, value: v})
		if curHeight == start {
			return p, nil
		}
		ph, onActive, err := b.activeHeight(prev)
		if err != nil {
			return stopPlan{}, err
		}
		if onActive {
			if ph != curHeight-1 {
				return stopPlan{}, fmt.Errorf("%w: stale block %s at height %d has active parent %s at height %d", ErrCorrupt, cur, curHeight, prev, ph)
			}
			return p, nil
		}
		v = b.stale.Get(prev[:])
		if v == nil {
			return stopPlan{}, fmt.Errorf("%w: stale block %s at height %d: parent %s is neither active nor stale", ErrCorrupt, cur, curHeight, prev)
		}
		parent := prev
		if ph, prev, err = stalePrevAndHeight(parent, v); err != nil {
			return stopPlan{}, err
		}
		if ph != curHeight-1 {
			return stopPlan{}, fmt.Errorf("%w: stale block %s at height %d has stale parent %s at height %d", ErrCorrupt, cur, curHeight, parent, ph)
		}
		cur, curHeight = parent, ph
	}
}
