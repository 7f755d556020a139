package store

import (
	"bytes"
	"fmt"

	"github.com/cfindexd/cfindexd/wireframe"
)

// Rollback disconnects every active block above toHeight in one bbolt
// transaction (and drops their silent-payment entries): each moves to the stale set (keyed by its hash, keeping its
// height, header, filter, filter header, filter hash and cfilter checksum,
// so FilterByHash, HeaderByHash, HeightOf, FiltersForStop and EachFilter
// still find it) and the tip moves to toHeight.
// It returns the disconnected records, highest first, with memory of their
// own.
//
// toHeight equal to the tip height is a no-op that returns nothing;
// toHeight above the tip fails with ErrBadRange, and an empty store with
// ErrNotFound. The genesis block cannot be disconnected. The transaction
// and the result hold every disconnected block in memory, which suits reorg
// depths, not rewinding a whole chain.
func (s *Store) Rollback(toHeight uint32) ([]BlockRecord, error) {
	return s.Reorg(toHeight, nil)
}

// Reorg switches the active chain to another branch in one bbolt
// transaction: it disconnects every block above toHeight as Rollback does,
// then appends recs as CommitBatch does (recs[0] at toHeight+1, building on
// the block at toHeight). Readers see the old branch or the new one, never
// the shorter chain in between, which matters to light clients: a peer
// that is shown a tip with less work than one it already has drops the
// connection. With no recs, Reorg is Rollback. On any error nothing is
// written. It returns the disconnected records, highest first.
func (s *Store) Reorg(toHeight uint32, recs []BlockRecord) ([]BlockRecord, error) {
	var enc encodedBatch
	if len(recs) > 0 {
		var err error
		if enc, err = checkBatch(recs); err != nil {
			return nil, fmt.Errorf("reorg to %d: %w", toHeight, err)
		}
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	var (
		disconnected []BlockRecord
		newTip       Tip
	)
	err := s.update(func(b *buckets) error {
		var err error
		disconnected, newTip, err = b.disconnectAbove(toHeight)
		if err == nil {
			err = s.sp.Truncate(b.meta.Tx(), toHeight)
		}
		if err != nil || len(recs) == 0 {
			return err
		}
		newTip, err = s.connect(b, newTip, true, recs, enc)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reorg to %d: %w", toHeight, err)
	}
	if len(disconnected) > 0 || len(recs) > 0 {
		s.setTip(newTip, true)
	}
	return disconnected, nil
}

// disconnectAbove moves every active block above toHeight to the stale set
// and the stored tip to toHeight, returning the disconnected records
// (highest first, with memory of their own) and the new tip.
func (b *buckets) disconnectAbove(toHeight uint32) ([]BlockRecord, Tip, error) {
	tip, ok, err := b.readTip()
	if err != nil {
		return nil, Tip{}, err
	}
	if !ok {
		return nil, Tip{}, fmt.Errorf("empty store: %w", ErrNotFound)
	}
	if toHeight > tip.Height {
		return nil, Tip{}, fmt.Errorf("%w: target %d above tip %d", ErrBadRange, toHeight, tip.Height)
	}
	disconnected := make([]BlockRecord, 0, tip.Height-toHeight)
	var ck wireframe.CFilterHasher
	for h := tip.Height; h > toHeight; h-- {
		r, err := b.activeRecord(h)
		if err != nil {
			return nil, Tip{}, fmt.Errorf("disconnect %d: %w", h, err)
		}
		r.Filter = bytes.Clone(r.Filter)
		sum, err := b.activeChecksum(h, &r.Hash, r.Filter, &ck)
		if err != nil {
			return nil, Tip{}, fmt.Errorf("disconnect %d: %w", h, err)
		}
		if err := b.moveToStale(&r, sum); err != nil {
			return nil, Tip{}, err
		}
		disconnected = append(disconnected, r)
	}
	if len(disconnected) == 0 {
		return nil, tip, nil
	}
	nt, err := b.activeRecord(toHeight)
	if err != nil {
		return nil, Tip{}, fmt.Errorf("new tip %d: %w", toHeight, err)
	}
	newTip := Tip{Height: toHeight, Hash: nt.Hash, FilterHeader: nt.FilterHeader}
	return disconnected, newTip, b.meta.Put(metaTip, tipValue(newTip))
}

// moveToStale deletes r from the active chain and files it under its hash
// in the stale set, with its cfilter checksum sum.
func (b *buckets) moveToStale(r *BlockRecord, sum wireframe.Checksum) error {
	k := heightKey(r.Height)
	if err := b.stale.Put(r.Hash[:], staleValue(r, sum)); err != nil {
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
	if err := b.checksums.Delete(k); err != nil {
		return fmt.Errorf("delete checksum %d: %w", r.Height, err)
	}
	return nil
}
