package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/cfindexd/cfindexd/wireframe"
)

// Schema 1 → 2: the cfilter checksums.
//
// Schema 2 keeps each filter's P2P message checksum (wireframe.CFilterHasher) in
// the checksums bucket (active chain) and inside each stale value. A
// schema-1 file is upgraded in place, without a re-index, in two steps:
//
//  1. At Open, one write transaction creates the checksums bucket,
//     rewrites every stale value with its checksum (a stale set holds a
//     few blocks per reorg, so this is quick), records the heights that
//     still lack a checksum, 0..tip, in meta/checksum_backfill, and sets
//     the schema version to 2. A crash leaves the file at schema 1 or
//     fully at schema 2, never in between.
//  2. A background backfill, started by Open whenever the marker is
//     present, computes the missing checksums from the bottom up in
//     batches (backfillBatchBytes of filters or backfillBatchHeights
//     heights), each read in one short read transaction and written in
//     one write transaction that also moves the marker: a crash loses at
//     most the batch in flight, which the next Open computes again. When
//     the marker reaches its end it is deleted.
//
// Meanwhile reads compute the checksum of a height the marker still
// covers (what every read did before schema 2), and a missing checksum
// outside it is ErrCorrupt. Blocks committed, disconnected or reconnected
// meanwhile get their checksum from CommitBatch or Reorg as always: the
// backfill skips a height that has a checksum or whose block changed since
// it was read, and never looks above the tip (a height above it gets its
// checksum when a block is committed there).
//
// An older build refuses the upgraded file (ErrSchemaVersion): it cannot
// be downgraded, only rebuilt.

// Backfill batch bounds: what one read transaction hashes and one write
// transaction writes: small enough that a read transaction hashing a batch
// delays a commit that grows the file only briefly, large enough that the
// one fsync per batch does not dominate on a slow disk.
const (
	backfillBatchBytes   = 16 << 20
	backfillBatchHeights = 50_000
)

// BackfillStatus describes the checksum backfill of a store upgraded from
// schema 1.
type BackfillStatus struct {
	// Pending is true while some active heights lack a stored checksum:
	// Next..End-1 (reads compute those).
	Pending   bool
	Next, End uint32
	// Err is the error that stopped the backfill in this process, if any;
	// it starts again at the next Open.
	Err error
}

// ChecksumBackfill reports the checksum backfill's progress.
func (s *Store) ChecksumBackfill() (BackfillStatus, error) {
	var st BackfillStatus
	err := s.view(func(b *buckets) (err error) {
		st.Next, st.End, st.Pending, err = b.readBackfill()
		return err
	})
	if err != nil {
		return BackfillStatus{}, fmt.Errorf("checksum backfill status: %w", err)
	}
	s.mu.RLock()
	st.Err = s.backfillErr
	s.mu.RUnlock()
	return st, nil
}

// upgradeFromV1 converts a schema-1 file to schema 2 in the write
// transaction tx (step 1 above).
func upgradeFromV1(tx *bolt.Tx) error {
	if tx.Bucket(bucketChecksums) != nil {
		return fmt.Errorf("%w: schema 1 file already has a %q bucket", ErrCorrupt, bucketChecksums)
	}
	if _, err := tx.CreateBucket(bucketChecksums); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketChecksums, err)
	}
	b, err := openBuckets(tx)
	if err != nil {
		return err
	}
	var ck wireframe.CFilterHasher
	err = b.rewriteStale(func(hash *chainhash.Hash, v1 []byte) ([]byte, error) {
		if len(v1) <= staleFixedLenV1 || len(v1) > staleFixedLenV1+MaxFilterSize {
			return nil, fmt.Errorf("%w: schema 1 stale value for %s is %d bytes", ErrCorrupt, hash, len(v1))
		}
		filter := v1[staleFixedLenV1:]
		sum := ck.Sum(hash, filter)
		v2 := make([]byte, 0, staleFixedLen+len(filter))
		v2 = append(v2, v1[:staleFixedLenV1]...)
		v2 = append(v2, sum[:]...)
		return append(v2, filter...), nil
	})
	if err != nil {
		return err
	}
	return b.finishUpgrade(schemaV2)
}

// startBackfill runs the checksum backfill in the background if the store
// has heights without a checksum. Close stops it.
func (s *Store) startBackfill(opts Options) error {
	var pending bool
	err := s.view(func(b *buckets) (err error) {
		_, _, pending, err = b.readBackfill()
		return err
	})
	if err != nil || !pending || opts.holdBackfill {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.backfillStop, s.backfillDone = cancel, done
	limits := backfillLimits{bytes: backfillBatchBytes, heights: backfillBatchHeights}
	if opts.backfillBatchHeights > 0 {
		limits.heights = opts.backfillBatchHeights
	}
	go func() {
		defer close(done)
		err := s.runBackfill(ctx, limits, opts.backfillHook)
		if err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
			s.mu.Lock()
			s.backfillErr = err
			s.mu.Unlock()
		}
	}()
	return nil
}

// stopBackfill stops the background backfill and waits for it.
func (s *Store) stopBackfill() {
	if s.backfillStop != nil {
		s.backfillStop()
		<-s.backfillDone
	}
}

// backfillLimits bound one backfill batch.
type backfillLimits struct {
	bytes   int
	heights int
}

// runBackfill runs backfill batches until none is pending or ctx ends.
// hook, if set, is called with "read" and the batch's first height after
// each batch is read, and with "write" and the marker's new next height
// after it is written (tests use it).
func (s *Store) runBackfill(ctx context.Context, limits backfillLimits, hook func(phase string, next uint32)) error {
	var ck wireframe.CFilterHasher
	for ctx.Err() == nil {
		pending, err := s.backfillBatch(&ck, limits, hook)
		if err != nil {
			return fmt.Errorf("checksum backfill: %w", err)
		}
		if !pending {
			return nil
		}
	}
	return ctx.Err()
}

// backfilled is the headers, checksums and filterheaders values of one
// height, with their CRC32Cs, computed by the backfill; nil for a value
// that has its CRC already or that the backfill leaves as it is (a header
// that does not hash to its hash, and the checksum computed from that
// hash).
type backfilled struct {
	key     []byte
	hash    chainhash.Hash
	hValue  []byte
	sum     []byte
	fhValue []byte
}

// backfill computes the values of height h that lack their CRC32Cs from
// its headers, filters, filterheaders and checksums values hv, fv, fhv
// and cv (cv nil when absent).
func backfill(h uint32, hv, fv, fhv, cv []byte, ck *wireframe.CFilterHasher) backfilled {
	it := backfilled{key: heightKey(h), hash: chainhash.Hash(hv[:hashLen])}
	headerOK := len(hv) == headerValueLen && binary.BigEndian.Uint32(hv[headerValueLenV3:]) == valueCRC(h, hv[:headerValueLenV3])
	if len(hv) == headerValueLenV3 && chainhash.DoubleHashH(hv[hashLen:]) == it.hash {
		headerOK = true
		it.hValue = make([]byte, headerValueLen)
		copy(it.hValue, hv)
		putHeaderCRC(it.hValue, h)
	}
	if len(cv) != checksumValueLen && headerOK {
		it.sum = checksumValue(h, ck.Sum(&it.hash, fv), fv)
	}
	if len(fhv) == filterHeaderValueLenV2 {
		fh, fhash := chainhash.Hash(fhv[:hashLen]), chainhash.Hash(fhv[hashLen:2*hashLen])
		it.fhValue = filterHeaderValue(h, &fh, &fhash)
	}
	return it
}

// backfillBatch computes the checksums of one batch in a read transaction
// and writes them, with the marker moved past the batch, in one write
// transaction. It returns whether heights are still pending.
func (s *Store) backfillBatch(ck *wireframe.CFilterHasher, limits backfillLimits, hook func(phase string, next uint32)) (bool, error) {
	var (
		items      []backfilled
		batchStart uint32
		batchEnd   uint32
		pending    bool
	)
	err := s.view(func(b *buckets) error {
		next, end, p, err := b.readBackfill()
		if err != nil || !p {
			return err
		}
		pending, batchStart = true, next
		if tip, ok, err := b.readTip(); err != nil {
			return err
		} else if ok {
			end = min(end, tip.Height+1)
		}
		hc, fc, fhc, cc := b.headers.Cursor(), b.filters.Cursor(), b.filterHeaders.Cursor(), b.checksums.Cursor()
		first := heightKey(next)
		hk, hv := hc.Seek(first)
		fk, fv := fc.Seek(first)
		fhk, fhv := fhc.Seek(first)
		ckey, cv := cc.Seek(first)
		size := 0
		h := next
		for ; h < end && len(items) < limits.heights && size < limits.bytes; h++ {
			if h > next {
				hk, hv = hc.Next()
				fk, fv = fc.Next()
				fhk, fhv = fhc.Next()
			}
			if !isHeight(hk, h) {
				return b.missing("header", h)
			}
			if len(hv) != headerValueLen && len(hv) != headerValueLenV3 {
				return fmt.Errorf("%w: header value at %d is %d bytes", ErrCorrupt, h, len(hv))
			}
			if !isHeight(fk, h) || len(fv) == 0 || len(fv) > MaxFilterSize {
				return fmt.Errorf("%w: height %d has a header but a filter of %d bytes", ErrCorrupt, h, len(fv))
			}
			if !isHeight(fhk, h) || (len(fhv) != filterHeaderValueLen && len(fhv) != filterHeaderValueLenV2) {
				return fmt.Errorf("%w: height %d has a header but a filter header value of %d bytes", ErrCorrupt, h, len(fhv))
			}
			for len(ckey) == heightLen && bytes.Compare(ckey, hk) < 0 {
				ckey, cv = cc.Next()
			}
			sumv := cv
			if !isHeight(ckey, h) {
				sumv = nil
			}
			if len(sumv) == checksumValueLen && len(fhv) == filterHeaderValueLen && len(hv) == headerValueLen {
				continue // committed by this schema since the upgrade
			}
			items = append(items, backfill(h, hv, fv, fhv, sumv, ck))
			if len(sumv) != checksumValueLen {
				size += len(fv)
			}
		}
		batchEnd = h
		return nil
	})
	if err != nil || !pending {
		return false, err
	}
	if hook != nil {
		hook("read", batchStart)
	}

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	stillToFill := false
	err = s.update(func(b *buckets) error {
		_, end, p, err := b.readBackfill()
		if err != nil || !p {
			return err
		}
		for _, it := range items {
			hv := b.headers.Get(it.key)
			if len(hv) < hashLen || !bytes.Equal(hv[:hashLen], it.hash[:]) {
				continue // disconnected since it was read; it has its CRCs
			}
			puts := []struct {
				bkt   *bolt.Bucket
				value []byte
				full  int
			}{{b.headers, it.hValue, headerValueLen}, {b.checksums, it.sum, checksumValueLen}, {b.filterHeaders, it.fhValue, filterHeaderValueLen}}
			for _, p := range puts {
				// A value with its CRC was committed or repaired
				// since the batch was read.
				if p.value == nil || len(p.bkt.Get(it.key)) == p.full {
					continue
				}
				if err := p.bkt.Put(it.key, p.value); err != nil {
					return fmt.Errorf("backfill height %d: %w", binary.BigEndian.Uint32(it.key), err)
				}
			}
		}
		tip, ok, err := b.readTip()
		if err != nil {
			return err
		}
		if ok {
			end = min(end, tip.Height+1)
		}
		if batchEnd >= end {
			return b.meta.Delete(metaChecksumBackfill)
		}
		stillToFill = true
		return b.meta.Put(metaChecksumBackfill, backfillValue(batchEnd, end))
	})
	if err != nil {
		return false, err
	}
	if hook != nil {
		hook("write", batchEnd)
	}
	return stillToFill, nil
}
