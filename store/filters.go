package store

import (
	"encoding/binary"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/cfindexd/cfindexd/wireframe"
)

// FilterByHash returns the record of the block hash, on the active chain
// (true) or in the stale set (false), or ErrNotFound.
func (s *Store) FilterByHash(hash chainhash.Hash) (BlockRecord, bool, error) {
	var (
		rec    BlockRecord
		active bool
	)
	err := s.Read(func(v *Snapshot) (err error) {
		rec, active, err = v.FilterByHash(hash)
		return err
	})
	return rec, active, err
}

// FiltersByHeight returns the active records at heights start..end
// inclusive, ascending, read in one transaction by a sequential cursor scan
// of each height-keyed bucket. It fails with ErrBadRange if start > end,
// ErrRangeTooLarge beyond MaxRange heights and ErrNotFound if end is above
// the tip. The filters of one call share one backing array (each slice is
// capped at its own length).
func (s *Store) FiltersByHeight(start, end uint32) ([]BlockRecord, error) {
	var recs []BlockRecord
	err := s.Read(func(v *Snapshot) (err error) {
		recs, err = v.FiltersByHeight(start, end)
		return err
	})
	return recs, err
}

// FilterHeadersByHeight returns the active filter headers at heights
// start..end inclusive, ascending, with the same errors as FiltersByHeight.
func (s *Store) FilterHeadersByHeight(start, end uint32) ([]chainhash.Hash, error) {
	var out []chainhash.Hash
	err := s.Read(func(v *Snapshot) (err error) {
		out, err = v.FilterHeadersByHeight(start, end)
		return err
	})
	return out, err
}

// scanActive fills recs with the active blocks at start, start+1, ...
// using one cursor per bucket moving in step, each filter and filter header
// checked. Filters alias bbolt memory until detach.
func (b *buckets) scanActive(start uint32, recs []BlockRecord) error {
	if len(recs) == 0 {
		return nil
	}
	first := heightKey(start)
	hc, fc, fhc, cc := b.headers.Cursor(), b.filters.Cursor(), b.filterHeaders.Cursor(), b.checksums.Cursor()
	hk, hv := hc.Seek(first)
	fk, fv := fc.Seek(first)
	fhk, fhv := fhc.Seek(first)
	ck, cv := cc.Seek(first)
	var hasher wireframe.CFilterHasher
	for i := range recs {
		h := start + uint32(i)
		if i > 0 {
			hk, hv = hc.Next()
			fk, fv = fc.Next()
			fhk, fhv = fhc.Next()
			// The checksums cursor may lag behind (heights the
			// backfill has not reached).
			for len(ck) == heightLen && binary.BigEndian.Uint32(ck) < h {
				ck, cv = cc.Next()
			}
		}
		if !isHeight(hk, h) {
			return b.missing("header", h)
		}
		if !isHeight(fk, h) || len(fv) == 0 || !isHeight(fhk, h) {
			return fmt.Errorf("%w: height %d has a header but no filter or filter header", ErrCorrupt, h)
		}
		if len(fv) > MaxFilterSize {
			return fmt.Errorf("%w: filter at %d is %d bytes", ErrCorrupt, h, len(fv))
		}
		r := &recs[i]
		r.Height = h
		var err error
		if r.Hash, r.Header, err = b.decodeHeaderAt(h, hv); err != nil {
			return err
		}
		if r.FilterHeader, r.FilterHash, err = b.filterHeaderAt(h, fhv); err != nil {
			return err
		}
		if !isHeight(ck, h) {
			cv = nil
		}
		if _, err := b.checkedSum(h, cv, fv, &r.Hash, &hasher); err != nil {
			return err
		}
		r.Filter = fv
	}
	return nil
}

// scanFilterHeaders fills out with the active filter headers at start,
// start+1, ... with one cursor.
func (b *buckets) scanFilterHeaders(start uint32, out []chainhash.Hash) error {
	return b.scanFilterChain(start, len(out), func(i int, fh, _ chainhash.Hash) { out[i] = fh })
}

// scanFilterChain calls visit with the active filter header and filter
// hash at heights start, start+1, ... start+n-1 (i counting from 0), with
// one cursor over the filterheaders bucket.
func (b *buckets) scanFilterChain(start uint32, n int, visit func(i int, filterHeader, filterHash chainhash.Hash)) error {
	return eachHeight(b.filterHeaders, start, n, b.missingFilterHeader, func(h uint32, v []byte) error {
		fh, fhash, err := b.filterHeaderAt(h, v)
		if err != nil {
			return err
		}
		visit(int(h-start), fh, fhash)
		return nil
	})
}

// eachHeight calls visit with the value at each of the heights start,
// start+1, ... start+n-1 of bkt (a bucket keyed by height), in order, with
// one cursor, until visit returns an error; the first height without a
// key ends the walk with missing(height).
func eachHeight(bkt *bolt.Bucket, start uint32, n int, missing func(h uint32) error, visit func(h uint32, v []byte) error) error {
	if n == 0 {
		return nil
	}
	c := bkt.Cursor()
	k, v := c.Seek(heightKey(start))
	for i := 0; i < n; i++ {
		if i > 0 {
			k, v = c.Next()
		}
		h := start + uint32(i)
		if !isHeight(k, h) {
			return missing(h)
		}
		if err := visit(h, v); err != nil {
			return err
		}
	}
	return nil
}

// detach copies the filters of recs, which may alias bbolt memory, into one
// new array, so the records outlive the transaction with two allocations
// whatever their number.
func detach(recs []BlockRecord) {
	total := 0
	for i := range recs {
		total += len(recs[i].Filter)
	}
	arena := make([]byte, total)
	off := 0
	for i := range recs {
		n := copy(arena[off:], recs[i].Filter)
		recs[i].Filter = arena[off : off+n : off+n]
		off += n
	}
}

// isHeight reports whether the cursor key k is the key of height h.
func isHeight(k []byte, h uint32) bool {
	return len(k) == heightLen && binary.BigEndian.Uint32(k) == h
}
