package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/btcsuite/btcd/chainhash/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/cfindexd/cfindexd/wireframe"
)

// Streaming reads of a getcfilters answer. A server that answers 1,000
// filters (25 MB at mainnet sizes) should read each one as it is about to
// send it, not all of them ahead of a slow peer, and must not hold a read
// transaction while it waits for the peer (a long read transaction keeps
// bbolt from remapping a growing file, stalling the writer). So the answer
// is read in two steps: BlockHashesForStop fixes, in one snapshot, which
// blocks the answer covers; EachFilter then reads their filters in as
// many short transactions as the caller likes. Since a block's filter is
// fixed by its hash and the store keeps the filters of blocks a reorg
// disconnected, the filters read later are exactly those of the snapshot:
// a reorg in between cannot mix two chains into one answer.

// BlockHashesForStop returns the hashes of the blocks at heights start..h on
// the chain that ends at stop (h is stop's height), ascending, read in one
// transaction: the blocks a getcfilters(start, stop) answer covers, active
// or stale as in FiltersForStop. Errors are those of FiltersForStop.
func (s *Store) BlockHashesForStop(stop chainhash.Hash, start uint32) ([]chainhash.Hash, error) {
	return s.AppendBlockHashesForStop(nil, stop, start)
}

// AppendBlockHashesForStop is BlockHashesForStop appending the hashes to
// dst, so that a caller answering many requests can reuse one slice. On
// error dst is returned unchanged.
func (s *Store) AppendBlockHashesForStop(dst []chainhash.Hash, stop chainhash.Hash, start uint32) ([]chainhash.Hash, error) {
	out := dst
	err := s.view(func(b *buckets) error {
		p, err := b.planForStop(stop, start)
		if err != nil {
			return err
		}
		out = slices.Grow(dst, int(p.stopHeight-start+1))[:len(dst)+int(p.stopHeight-start+1)]
		hs := out[len(dst):]
		nActive := len(hs) - len(p.stale)
		for i, st := range p.stale {
			hs[len(hs)-1-i] = st.hash
		}
		notFound := func(h uint32) error { return fmt.Errorf("height %d: %w", h, ErrNotFound) }
		return eachHeight(b.headers, start, nActive, notFound, func(h uint32, v []byte) (err error) {
			hs[h-start], _, err = b.headerAt(h, v)
			return err
		})
	})
	if err != nil {
		return dst, fmt.Errorf("block hashes from %d to stop %s: %w", start, stop, err)
	}
	return out, nil
}

// EachFilter reads, in one read transaction, the filters of the blocks
// hashes[0], hashes[1], ... which the caller knows to be at heights start,
// start+1, ..., each the parent of the next (a BlockHashesForStop answer,
// or part of one: EachFilter relies on it, reading the whole range from the
// active chain when its last block is there), calling fn
// with each in order, with the checksum of the cfilter message carrying it
// (wireframe.CFilterHasher), until fn returns more=false or an error, or all are
// read. It returns how many fn was called for. Each block is read from the
// active chain when it is still there at its height and from the stale set
// otherwise, so a reorg since the hashes were read does not change what
// is returned. A block that is in neither (never the case for hashes the
// store returned: nothing leaves the store) is ErrNotFound.
//
// The checksums are read from the store, beside the filters, and not
// computed, except for the heights of a store upgraded from schema 1 that
// the checksum backfill has not reached yet (see doc.go).
//
// filter aliases the store's memory: it is valid only during fn, which
// must neither modify nor keep it, and should be quick (the transaction is
// open while it runs).
func (s *Store) EachFilter(start uint32, hashes []chainhash.Hash, fn func(i int, filter []byte, sum wireframe.Checksum) (more bool, err error)) (int, error) {
	done := 0
	err := s.txn(false, func(tx *bolt.Tx) error {
		if len(hashes) == 0 {
			return nil
		}
		// The buckets of the common case only (opening a bucket costs
		// about as much as reading a few filters); all of them for a
		// stale block or a checksum not backfilled yet.
		b := &buckets{headers: tx.Bucket(bucketHeaders), filters: tx.Bucket(bucketFilters), checksums: tx.Bucket(bucketChecksums)}
		if b.headers == nil || b.filters == nil || b.checksums == nil {
			return fmt.Errorf("%w: bucket %q, %q or %q missing", ErrCorrupt, bucketHeaders, bucketFilters, bucketChecksums)
		}
		var all *buckets
		allBuckets := func() (*buckets, error) {
			if all == nil {
				var err error
				if all, err = openBuckets(tx); err != nil {
					return nil, err
				}
			}
			return all, nil
		}
		var ck wireframe.CFilterHasher
		// hashes is a chain: if its last block is active at its height,
		// so are all the others at theirs, and the headers need not be
		// walked (the common case: no reorg since the hashes were read).
		last := len(hashes) - 1
		lastHV := b.headers.Get(heightKey(start + uint32(last)))
		allActive := len(lastHV) >= hashLen && bytes.Equal(lastHV[:hashLen], hashes[last][:])
		var hc *bolt.Cursor
		var hk, hv []byte
		first := heightKey(start)
		if !allActive {
			hc = b.headers.Cursor()
			hk, hv = hc.Seek(first)
		}
		fc, cc := b.filters.Cursor(), b.checksums.Cursor()
		fk, fv := fc.Seek(first)
		ckey, cv := cc.Seek(first)
		for i := range hashes {
			h := start + uint32(i)
			if i > 0 {
				// The cursors advance one height at a time while they are
				// on it; past the tip they stay exhausted. The checksums
				// cursor may lag behind (heights not backfilled yet).
				if hc != nil && isHeight(hk, h-1) {
					hk, hv = hc.Next()
				}
				if isHeight(fk, h-1) {
					fk, fv = fc.Next()
				}
				for len(ckey) == heightLen && binary.BigEndian.Uint32(ckey) < h {
					ckey, cv = cc.Next()
				}
			}
			var (
				filter []byte
				sum    wireframe.Checksum
			)
			if allActive || isHeight(hk, h) && len(hv) >= hashLen && bytes.Equal(hv[:hashLen], hashes[i][:]) {
				if !isHeight(fk, h) || len(fv) == 0 {
					return fmt.Errorf("%w: height %d has a header but no filter", ErrCorrupt, h)
				}
				filter = fv
				if !isHeight(ckey, h) {
					cv = nil
				}
				if len(cv) != checksumValueLen {
					// Not backfilled yet: the slow path decides.
					all, err := allBuckets()
					if err != nil {
						return err
					}
					b = all
				}
				var err error
				if sum, err = b.checkedSum(h, cv, filter, &hashes[i], &ck); err != nil {
					return err
				}
			} else {
				all, err := allBuckets()
				if err != nil {
					return err
				}
				v := all.stale.Get(hashes[i][:])
				if v == nil {
					return fmt.Errorf("filter of block %s at height %d: %w", hashes[i], h, ErrNotFound)
				}
				r, rsum, err := decodeStale(hashes[i], v)
				if err != nil {
					return err
				}
				if r.Height != h {
					return fmt.Errorf("%w: stale block %s is at height %d, expected %d", ErrCorrupt, hashes[i], r.Height, h)
				}
				filter, sum = r.Filter, rsum
			}
			more, err := fn(i, filter, sum)
			done++
			if err != nil || !more {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return done, fmt.Errorf("filters from height %d: %w", start, err)
	}
	return done, nil
}
