package store

import (
	"bytes"
	"fmt"
)

// Rollback disconnects every active block above toHeight in one bbolt
// transaction: each moves to the stale set (keyed by its hash, keeping its
// height, header, filter and filter header, so FilterByHash, HeaderByHash,
// HeightOf and FiltersForStop still find it) and the tip moves to toHeight.
// It returns the disconnected records, highest first, with memory of their
// own.
//
// toHeight equal to the tip height is a no-op that returns nothing;
// toHeight above the tip fails with ErrBadRange, and an empty store with
// ErrNotFound. The genesis block cannot be disconnected. The transaction
// and the result hold every disconnected block in memory, which suits reorg
// depths, not rewinding a whole chain.
func (s *Store) Rollback(toHeight uint32) ([]BlockRecord, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	var (
		disconnected []BlockRecord
		newTip       Tip
	)
	err := s.update(func(b *buckets) error {
		tip, ok, err := b.readTip()
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("empty store: %w", ErrNotFound)
		}
		if toHeight > tip.Height {
			return fmt.Errorf("%w: target %d above tip %d", ErrBadRange, toHeight, tip.Height)
		}
		disconnected = make([]BlockRecord, 0, tip.Height-toHeight)
		for h := tip.Height; h > toHeight; h-- {
			r, err := b.activeRecord(h)
			if err != nil {
				return fmt.Errorf("disconnect %d: %w", h, err)
			}
			r.Filter = bytes.Clone(r.Filter)
			if err := b.moveToStale(&r); err != nil {
				return err
			}
			disconnected = append(disconnected, r)
		}
		if len(disconnected) == 0 {
			newTip = tip
			return nil
		}
		nt, err := b.activeRecord(toHeight)
		if err != nil {
			return fmt.Errorf("new tip %d: %w", toHeight, err)
		}
		newTip = Tip{Height: toHeight, Hash: nt.Hash, FilterHeader: nt.FilterHeader}
		return b.meta.Put(metaTip, tipValue(newTip))
	})
	if err != nil {
		return nil, fmt.Errorf("rollback to %d: %w", toHeight, err)
	}
	if len(disconnected) > 0 {
		s.setTip(newTip, true)
	}
	return disconnected, nil
}

// moveToStale deletes r from the active chain and files it under its hash
// in the stale set.
func (b *buckets) moveToStale(r *BlockRecord) error {
	k := heightKey(r.Height)
	if err := b.stale.Put(r.Hash[:], staleValue(r)); err != nil {
		return fmt.Errorf("put stale %s: %w", r.Hash, err)
	}
	if err := b.headers.Delete(k); err != nil {
		return fmt.Errorf("delete header %d: %w", r.Height, err)
	}
	if err := b.heights.Delete(r.Hash[:]); err != nil {
		return fmt.Errorf("delete height of %s: %w", r.Hash, err)
	}
	if err := b.filters.Delete(k); err != nil {
		return fmt.Errorf("delete filter %d: %w", r.Height, err)
	}
	if err := b.filterHeaders.Delete(k); err != nil {
		return fmt.Errorf("delete filter header %d: %w", r.Height, err)
	}
	return nil
}
