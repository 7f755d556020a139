package store

import (
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/wireframe"
)

// CommitBatch appends recs to the active chain and moves the tip to the last
// of them, all in one bbolt transaction: after a crash the store holds
// either the whole batch or none of it.
//
// recs must extend the tip: heights tip+1, tip+2, ... (on an empty store the
// first record is the genesis block at height 0 whose Hash is the genesis
// hash Open was given), and each Header.PrevBlock is the Hash of the block
// before it; otherwise CommitBatch returns ErrNotConnected. A record whose
// Hash is not Header.BlockHash(), whose Filter is empty or longer than
// MaxFilterSize, or whose non-zero
// FilterHash is not dSHA256(Filter) fails with ErrInvalidRecord. Each
// FilterHeader must continue the BIP-157 chain, dSHA256(FilterHash ||
// previous FilterHeader) with the tip's (zero below genesis) before the
// first record; otherwise CommitBatch fails with ErrFilterHeaderMismatch.
// The store verifies filter headers but does not compute them for the
// caller. On any error nothing is written.
//
// CommitBatch also computes each block's cfilter checksum
// (wireframe.CFilterHasher: the P2P message checksum of the cfilter carrying its
// filter) and stores it, so that servers send filters without hashing.
// The filter hashes and checksums are computed before the write
// transaction starts, so hashing the batch's filters does not hold the
// writer lock.
//
// A record whose hash is in the stale set (a reorg back onto a branch that
// was disconnected) is removed from the stale set. An empty recs is a no-op.
// The store neither keeps nor modifies recs or their Filter slices.
func (s *Store) CommitBatch(recs []BlockRecord) error {
	if len(recs) == 0 {
		return nil
	}
	enc, err := checkBatch(recs)
	if err != nil {
		return fmt.Errorf("commit batch at height %d: %w", recs[0].Height, err)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	var newTip Tip
	err = s.update(func(b *buckets) error {
		tip, ok, err := b.readTip()
		if err != nil {
			return err
		}
		newTip, err = s.connect(b, tip, ok, recs, enc)
		return err
	})
	if err != nil {
		return fmt.Errorf("commit batch at height %d: %w", recs[0].Height, err)
	}
	s.setTip(newTip, true)
	return nil
}

// connect appends recs (already checked and encoded by checkBatch) on top
// of tip inside a write transaction and stores the new tip, which it
// returns.
func (s *Store) connect(b *buckets, tip Tip, haveTip bool, recs []BlockRecord, enc encodedBatch) (Tip, error) {
	if err := s.checkConnects(tip, haveTip, &recs[0], enc.filterHash(0)); err != nil {
		return Tip{}, err
	}
	if err := b.putActive(recs, enc); err != nil {
		return Tip{}, err
	}
	for i := range recs {
		if err := s.sp.Connect(b.meta.Tx(), recs[i].Height, recs[i].Hash, recs[i].SilentPay); err != nil {
			return Tip{}, err
		}
	}
	last := recs[len(recs)-1]
	newTip := Tip{Height: last.Height, Hash: last.Hash, FilterHeader: last.FilterHeader}
	return newTip, b.meta.Put(metaTip, tipValue(newTip))
}

// checkBatch checks what can be checked without the store: each record on
// its own, and the links and filter-header chain between consecutive
// records. It returns the batch's keys and values, filter hashes and
// cfilter checksums included.
// Each header is hashed from its encoding in the batch (the stored bytes),
// without wire's io.Writer path.
func checkBatch(recs []BlockRecord) (encodedBatch, error) {
	enc := newEncodedBatch(len(recs))
	var ck wireframe.CFilterHasher
	for i := range recs {
		r := &recs[i]
		if len(r.Filter) == 0 || len(r.Filter) > MaxFilterSize {
			return encodedBatch{}, fmt.Errorf("%w: block %s at height %d: filter of %d bytes, want 1..%d", ErrInvalidRecord, r.Hash, r.Height, len(r.Filter), MaxFilterSize)
		}
		if got := enc.encode(i, r); got != r.Hash {
			return encodedBatch{}, fmt.Errorf("%w: block at height %d: Hash %s but header hashes to %s", ErrInvalidRecord, r.Height, r.Hash, got)
		}
		filterHash := headers.FilterHash(r.Filter)
		if r.FilterHash != (chainhash.Hash{}) && r.FilterHash != filterHash {
			return encodedBatch{}, fmt.Errorf("%w: block %s at height %d: FilterHash %s but the filter hashes to %s", ErrInvalidRecord, r.Hash, r.Height, r.FilterHash, filterHash)
		}
		enc.setFilterHash(i, r, filterHash)
		enc.setChecksum(i, r, ck.Sum(&r.Hash, r.Filter))
		if i == 0 {
			continue
		}
		prev := &recs[i-1]
		if prev.Height == ^uint32(0) || r.Height != prev.Height+1 {
			return encodedBatch{}, fmt.Errorf("%w: height %d follows height %d", ErrNotConnected, r.Height, prev.Height)
		}
		if r.Header.PrevBlock != prev.Hash {
			return encodedBatch{}, fmt.Errorf("%w: block %s at height %d has prev %s, want %s", ErrNotConnected, r.Hash, r.Height, r.Header.PrevBlock, prev.Hash)
		}
		if err := checkFilterHeader(r, filterHash, prev.FilterHeader); err != nil {
			return encodedBatch{}, err
		}
	}
	return enc, nil
}

// checkFilterHeader checks that r.FilterHeader chains r's filter hash onto
// prevFilterHeader.
func checkFilterHeader(r *BlockRecord, filterHash, prevFilterHeader chainhash.Hash) error {
	if want := headers.FilterHeaderFromHash(filterHash, prevFilterHeader); r.FilterHeader != want {
		return fmt.Errorf("%w: block %s at height %d: FilterHeader %s, want %s", ErrFilterHeaderMismatch, r.Hash, r.Height, r.FilterHeader, want)
	}
	return nil
}

// checkConnects checks that first extends the stored tip, block and filter
// header alike.
func (s *Store) checkConnects(tip Tip, haveTip bool, first *BlockRecord, filterHash chainhash.Hash) error {
	if !haveTip {
		if first.Height != 0 || first.Hash != s.genesis {
			return fmt.Errorf("%w: empty store needs genesis %s at height 0, got %s at height %d", ErrNotConnected, s.genesis, first.Hash, first.Height)
		}
		return checkFilterHeader(first, filterHash, chainhash.Hash{})
	}
	if tip.Height == ^uint32(0) || first.Height != tip.Height+1 {
		return fmt.Errorf("%w: height %d does not follow tip height %d", ErrNotConnected, first.Height, tip.Height)
	}
	if first.Header.PrevBlock != tip.Hash {
		return fmt.Errorf("%w: block %s at height %d has prev %s, tip is %s", ErrNotConnected, first.Hash, first.Height, first.Header.PrevBlock, tip.Hash)
	}
	return checkFilterHeader(first, filterHash, tip.FilterHeader)
}

// putActive writes recs, encoded in enc, to the active chain and drops
// them from the stale set. It fills one bucket at a time, which keeps each
// bucket's B+tree path hot; bbolt splits nodes only at commit, so the
// order of the puts within a transaction does not change the pages written.
func (b *buckets) putActive(recs []BlockRecord, enc encodedBatch) error {
	for i := range recs {
		if err := b.headers.Put(enc.heightKey(i), enc.headerValue(i)); err != nil {
			return fmt.Errorf("put header %d: %w", recs[i].Height, err)
		}
	}
	for i := range recs {
		if err := b.heights.Put(recs[i].Hash[:], enc.heightKey(i)); err != nil {
			return fmt.Errorf("put height of %s: %w", recs[i].Hash, err)
		}
	}
	for i := range recs {
		if err := b.filters.Put(enc.heightKey(i), recs[i].Filter); err != nil {
			return fmt.Errorf("put filter %d: %w", recs[i].Height, err)
		}
	}
	for i := range recs {
		if err := b.filterHeaders.Put(enc.heightKey(i), enc.filterHeaderValue(i)); err != nil {
			return fmt.Errorf("put filter header %d: %w", recs[i].Height, err)
		}
	}
	for i := range recs {
		if err := b.checksums.Put(enc.heightKey(i), enc.checksumValue(i)); err != nil {
			return fmt.Errorf("put checksum %d: %w", recs[i].Height, err)
		}
	}
	// The stale set is empty until a reorg; one look saves a lookup per
	// record.
	if k, _ := b.stale.Cursor().First(); k == nil {
		return nil
	}
	for i := range recs {
		r := &recs[i]
		if b.stale.Get(r.Hash[:]) != nil {
			if err := b.stale.Delete(r.Hash[:]); err != nil {
				return fmt.Errorf("delete stale %s: %w", r.Hash, err)
			}
		}
	}
	return nil
}
