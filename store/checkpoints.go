package store

import (
	"encoding/binary"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// MaxCheckpoints bounds the answer of FilterHeaderCheckpoints (2 MiB of
// filter headers). At BIP-157's interval of 1,000 it covers 65 million
// blocks.
const MaxCheckpoints = 1 << 16

// FilterHeaderCheckpoints returns the filter headers at heights interval,
// 2·interval, ... up to the height h of the block stop, on the chain that
// ends at stop: the active chain up to where stop's stale branch (if stop
// is stale) forks from it, then the branch. With interval 1,000 this is a
// cfcheckpt answer. Everything is read in one transaction, so the answer
// is of one committed chain even while a reorg commits; the active part is
// one lookup per checkpoint, the stale part a walk of the branch by
// PrevBlock.
//
// It fails with ErrNotFound for an unknown stop, ErrBadRange for interval
// 0 and ErrRangeTooLarge if h/interval exceeds MaxCheckpoints. A stop below
// the first checkpoint gives an empty answer.
func (s *Store) FilterHeaderCheckpoints(stop chainhash.Hash, interval uint32) ([]chainhash.Hash, error) {
	if interval == 0 {
		return nil, fmt.Errorf("checkpoints to stop %s: %w: interval 0", stop, ErrBadRange)
	}
	var out []chainhash.Hash
	err := s.view(func(b *buckets) error {
		forkHeight, stopHeight, branch, err := b.walkToActive(stop, interval)
		if err != nil {
			return err
		}
		count := stopHeight / interval
		if count > MaxCheckpoints {
			return fmt.Errorf("%w: %d checkpoints, at most %d", ErrRangeTooLarge, count, MaxCheckpoints)
		}
		out = make([]chainhash.Hash, 0, count)
		// One cursor seeking forward: a Get per height would allocate a
		// cursor each time.
		c := b.filterHeaders.Cursor()
		var key [heightLen]byte
		for h := uint64(interval); h <= uint64(forkHeight); h += uint64(interval) {
			binary.BigEndian.PutUint32(key[:], uint32(h))
			k, v := c.Seek(key[:])
			if !isHeight(k, uint32(h)) {
				return fmt.Errorf("%w: active height %d has no filter header", ErrCorrupt, h)
			}
			fh, _, err := b.filterHeaderAt(uint32(h), v)
			if err != nil {
				return err
			}
			out = append(out, fh)
		}
		for i := len(branch) - 1; i >= 0; i-- {
			out = append(out, branch[i])
		}
		if uint32(len(out)) != count {
			return fmt.Errorf("%w: %d checkpoints for stop height %d", ErrCorrupt, len(out), stopHeight)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints every %d to stop %s: %w", interval, stop, err)
	}
	return out, nil
}

// walkToActive locates stop and, if it is stale, walks its branch back by
// PrevBlock to the active chain. It returns the height of the newest block
// of the chain ending at stop that is on the active chain, stop's height,
// and the filter headers of the branch's blocks at multiples of interval,
// highest first. Heights strictly decrease along the walk (a parent at any
// other height is ErrCorrupt), so it ends.
func (b *buckets) walkToActive(stop chainhash.Hash, interval uint32) (forkHeight, stopHeight uint32, branch []chainhash.Hash, err error) {
	h, active, err := b.activeHeight(stop)
	if err != nil || active {
		return h, h, nil, err
	}
	cur, v := stop, b.stale.Get(stop[:])
	if v == nil {
		return 0, 0, nil, fmt.Errorf("stop %s: %w", stop, ErrNotFound)
	}
	for first := true; ; first = false {
		r, _, err := decodeStale(cur, v)
		if err != nil {
			return 0, 0, nil, err
		}
		if first {
			stopHeight = r.Height
		} else if r.Height != h-1 {
			return 0, 0, nil, fmt.Errorf("%w: stale block at height %d has stale parent %s at height %d", ErrCorrupt, h, cur, r.Height)
		}
		h = r.Height
		if h%interval == 0 {
			branch = append(branch, r.FilterHeader)
		}
		if h == 0 {
			return 0, 0, nil, fmt.Errorf("%w: stale block %s at height 0", ErrCorrupt, cur)
		}
		parent := r.Header.PrevBlock
		ph, onActive, err := b.activeHeight(parent)
		if err != nil {
			return 0, 0, nil, err
		}
		if onActive {
			if ph != h-1 {
				return 0, 0, nil, fmt.Errorf("%w: stale block %s at height %d has active parent %s at height %d", ErrCorrupt, cur, h, parent, ph)
			}
			return ph, stopHeight, branch, nil
		}
		if v = b.stale.Get(parent[:]); v == nil {
			return 0, 0, nil, fmt.Errorf("%w: stale block %s at height %d: parent %s is neither active nor stale", ErrCorrupt, cur, h, parent)
		}
		cur = parent
	}
}
