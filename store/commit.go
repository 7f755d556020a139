package store

import (
	"fmt"
)

// CommitBatch appends recs to the active chain and moves the tip to the last
// of them, all in one bbolt transaction: after a crash the store holds
// either the whole batch or none of it.
//
// recs must extend the tip: heights tip+1, tip+2, ... (on an empty store the
// first record is the genesis block at height 0 whose Hash is the genesis
// hash Open was given), and each Header.PrevBlock is the Hash of the block
// before it; otherwise CommitBatch returns ErrNotConnected. A record whose
// Hash is not Header.BlockHash() or whose Filter is empty fails with
// ErrInvalidRecord. On any error nothing is written. FilterHeader is stored
// as given; computing it is the caller's job.
//
// A record whose hash is in the stale set (a reorg back onto a branch that
// was disconnected) is removed from the stale set. An empty recs is a no-op.
// The store does not keep recs or their Filter slices after it returns.
func (s *Store) CommitBatch(recs []BlockRecord) error {
	if len(recs) == 0 {
		return nil
	}
	if err := checkBatch(recs); err != nil {
		return fmt.Errorf("commit batch at height %d: %w", recs[0].Height, err)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	last := recs[len(recs)-1]
	newTip := Tip{Height: last.Height, Hash: last.Hash, FilterHeader: last.FilterHeader}
	err := s.update(func(b *buckets) error {
		tip, ok, err := b.readTip()
		if err != nil {
			return err
		}
		if err := s.checkConnects(tip, ok, &recs[0]); err != nil {
			return err
		}
		for i := range recs {
			if err := b.putActive(&recs[i]); err != nil {
				return err
			}
		}
		return b.meta.Put(metaTip, tipValue(newTip))
	})
	if err != nil {
		return fmt.Errorf("commit batch at height %d: %w", recs[0].Height, err)
	}
	s.setTip(newTip, true)
	return nil
}

// checkBatch checks what can be checked without the store: each record on
// its own, and the links between consecutive records.
func checkBatch(recs []BlockRecord) error {
	for i := range recs {
		r := &recs[i]
		if len(r.Filter) == 0 {
			return fmt.Errorf("%w: block %s at height %d: empty filter", ErrInvalidRecord, r.Hash, r.Height)
		}
		if got := r.Header.BlockHash(); got != r.Hash {
			return fmt.Errorf("%w: block at height %d: Hash %s but header hashes to %s", ErrInvalidRecord, r.Height, r.Hash, got)
		}
		if i == 0 {
			continue
		}
		prev := &recs[i-1]
		if prev.Height == ^uint32(0) || r.Height != prev.Height+1 {
			return fmt.Errorf("%w: height %d follows height %d", ErrNotConnected, r.Height, prev.Height)
		}
		if r.Header.PrevBlock != prev.Hash {
			return fmt.Errorf("%w: block %s at height %d has prev %s, want %s", ErrNotConnected, r.Hash, r.Height, r.Header.PrevBlock, prev.Hash)
		}
	}
	return nil
}

// checkConnects checks that first extends the stored tip.
func (s *Store) checkConnects(tip Tip, haveTip bool, first *BlockRecord) error {
	if !haveTip {
		if first.Height != 0 || first.Hash != s.genesis {
			return fmt.Errorf("%w: empty store needs genesis %s at height 0, got %s at height %d", ErrNotConnected, s.genesis, first.Hash, first.Height)
		}
		return nil
	}
	if tip.Height == ^uint32(0) || first.Height != tip.Height+1 {
		return fmt.Errorf("%w: height %d does not follow tip height %d", ErrNotConnected, first.Height, tip.Height)
	}
	if first.Header.PrevBlock != tip.Hash {
		return fmt.Errorf("%w: block %s at height %d has prev %s, tip is %s", ErrNotConnected, first.Hash, first.Height, first.Header.PrevBlock, tip.Hash)
	}
	return nil
}

// putActive writes r to the active chain and drops it from the stale set.
func (b *buckets) putActive(r *BlockRecord) error {
	k := heightKey(r.Height)
	if err := b.headers.Put(k, headerValue(r.Hash, &r.Header)); err != nil {
		return fmt.Errorf("put header %d: %w", r.Height, err)
	}
	if err := b.heights.Put(r.Hash[:], k); err != nil {
		return fmt.Errorf("put height of %s: %w", r.Hash, err)
	}
	if err := b.filters.Put(k, r.Filter); err != nil {
		return fmt.Errorf("put filter %d: %w", r.Height, err)
	}
	if err := b.filterHeaders.Put(k, r.FilterHeader[:]); err != nil {
		return fmt.Errorf("put filter header %d: %w", r.Height, err)
	}
	if b.stale.Get(r.Hash[:]) != nil {
		if err := b.stale.Delete(r.Hash[:]); err != nil {
			return fmt.Errorf("delete stale %s: %w", r.Hash, err)
		}
	}
	return nil
}
