package store

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/cfindexd/cfindexd/wireframe"
)

// buckets holds the open buckets of one transaction. Nothing taken from it
// may outlive the transaction.
type buckets struct {
	meta          *bolt.Bucket
	headers       *bolt.Bucket
	heights       *bolt.Bucket
	filters       *bolt.Bucket
	filterHeaders *bolt.Bucket
	stale         *bolt.Bucket
	checksums     *bolt.Bucket
}

func openBuckets(tx *bolt.Tx) (*buckets, error) {
	b := &buckets{
		meta:          tx.Bucket(bucketMeta),
		headers:       tx.Bucket(bucketHeaders),
		heights:       tx.Bucket(bucketHeights),
		filters:       tx.Bucket(bucketFilters),
		filterHeaders: tx.Bucket(bucketFilterHeaders),
		stale:         tx.Bucket(bucketStale),
		checksums:     tx.Bucket(bucketChecksums),
	}
	for i, bk := range []*bolt.Bucket{b.meta, b.headers, b.heights, b.filters, b.filterHeaders, b.stale, b.checksums} {
		if bk == nil {
			return nil, fmt.Errorf("%w: bucket %q missing", ErrCorrupt, allBuckets[i])
		}
	}
	return b, nil
}

// setAppendFill raises the split threshold of the height-keyed buckets for
// this write transaction (bbolt does not persist FillPercent).
func (b *buckets) setAppendFill() {
	b.headers.FillPercent = appendFillPercent
	b.filters.FillPercent = appendFillPercent
	b.filterHeaders.FillPercent = appendFillPercent
	b.checksums.FillPercent = appendFillPercent
}

func (b *buckets) readTip() (Tip, bool, error) {
	v := b.meta.Get(metaTip)
	if v == nil {
		return Tip{}, false, nil
	}
	t, err := decodeTip(v)
	if err != nil {
		return Tip{}, false, fmt.Errorf("read tip: %w", err)
	}
	return t, true, nil
}

// missing is the error for height h absent from a height-keyed bucket
// (what names the read): ErrCorrupt when h is at or below the tip this
// transaction sees, since every such height is stored, and ErrNotFound
// above it (a read that raced a rollback, or a height not indexed yet).
func (b *buckets) missing(what string, h uint32) error {
	tip, ok, err := b.readTip()
	if err != nil {
		return err
	}
	if ok && h <= tip.Height {
		return fmt.Errorf("%w: %s at %d missing below the tip %d", ErrCorrupt, what, h, tip.Height)
	}
	return fmt.Errorf("%s at %d: %w", what, h, ErrNotFound)
}

// missingHeader and missingFilterHeader are missing for the headers and
// filterheaders buckets.
func (b *buckets) missingHeader(h uint32) error       { return b.missing("header", h) }
func (b *buckets) missingFilterHeader(h uint32) error { return b.missing("filter header", h) }

// readBackfill returns the heights whose checksums the backfill has not
// written yet, next..end-1, and false when there are none.
func (b *buckets) readBackfill() (next, end uint32, pending bool, err error) {
	v := b.meta.Get(metaChecksumBackfill)
	if v == nil {
		return 0, 0, false, nil
	}
	next, end, err = decodeBackfill(v)
	if err != nil {
		return 0, 0, false, err
	}
	return next, end, true, nil
}

// checksumFallback is what a read does about an active height h whose
// checksum is not stored: compute it, when h is one the backfill has not
// reached yet (ok), or report the file corrupt.
func (b *buckets) checksumFallback(h uint32) error {
	next, end, pending, err := b.readBackfill()
	if err != nil {
		return err
	}
	if pending && h >= next && h < end {
		return nil
	}
	return fmt.Errorf("%w: checksum at height %d missing (backfill pending %v, %d..%d)", ErrCorrupt, h, pending, next, end)
}

// activeChecksum returns the cfilter checksum of the active block hash at
// height h, whose filter is filter, after checking both against their
// CRC32Cs: the stored one, or, for a height the backfill has not reached,
// computed with ck.
func (b *buckets) activeChecksum(h uint32, hash *chainhash.Hash, filter []byte, ck *wireframe.CFilterHasher) (wireframe.Checksum, error) {
	return b.checkedSum(h, b.checksums.Get(heightKey(h)), filter, hash, ck)
}

// activeHeight returns the height of hash if it is on the active chain.
// The heights value is checked against the block hash stored at the
// height it names (checked.go): one look-up, no CRC of its own.
func (b *buckets) activeHeight(hash chainhash.Hash) (uint32, bool, error) {
	v := b.heights.Get(hash[:])
	if v == nil {
		return 0, false, nil
	}
	h, err := decodeHeight(v)
	if err != nil {
		return 0, false, fmt.Errorf("height of %s: %w", hash, err)
	}
	hv := b.headers.Get(v)
	if len(hv) == headerValueLen && binary.BigEndian.Uint32(hv[headerValueLenV3:]) != valueCRC(h, hv[:headerValueLenV3]) {
		return 0, false, mismatch(h, whatHeader) // the damage is there
	}
	if len(hv) < hashLen || !bytes.Equal(hv[:hashLen], hash[:]) {
		return 0, false, &MismatchError{Height: h, Hash: hash, What: "height index of block " + hash.String(), HeightIndex: true}
	}
	return h, true, nil
}

// activeRecord reads the active block at height, its filter and filter
// header checked; Filter aliases bbolt memory.
func (b *buckets) activeRecord(height uint32) (BlockRecord, error) {
	k := heightKey(height)
	hv := b.headers.Get(k)
	if hv == nil {
		return BlockRecord{}, b.missing("header", height)
	}
	hash, hdr, err := b.decodeHeaderAt(height, hv)
	if err != nil {
		return BlockRecord{}, err
	}
	filter := b.filters.Get(k)
	if len(filter) == 0 || len(filter) > MaxFilterSize {
		return BlockRecord{}, fmt.Errorf("%w: height %d has a header but a filter of %d bytes", ErrCorrupt, height, len(filter))
	}
	fh, fhash, err := b.filterHeaderAt(height, b.filterHeaders.Get(k))
	if err != nil {
		return BlockRecord{}, err
	}
	if err := b.checkFilter(height, &hash, filter); err != nil {
		return BlockRecord{}, err
	}
	return BlockRecord{Height: height, Hash: hash, Header: hdr, Filter: filter, FilterHeader: fh, FilterHash: fhash}, nil
}

// checkRange validates an inclusive height range.
func checkRange(start, end uint32) error {
	if start > end {
		return fmt.Errorf("%w: start %d above end %d", ErrBadRange, start, end)
	}
	if end-start >= MaxRange {
		return fmt.Errorf("%w: %d heights from %d, at most %d", ErrRangeTooLarge, uint64(end-start)+1, start, MaxRange)
	}
	return nil
}
