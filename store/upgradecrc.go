package store

import (
	"encoding/binary"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	bolt "go.etcd.io/bbolt"
)

// Schema 2 → 3: the CRC32Cs of checked reads (checked.go).
//
// At Open, one write transaction rewrites every stale value with its CRC
// (a stale set holds a few blocks per reorg), marks every active height,
// 0..tip, in meta/checksum_backfill and sets the schema version to 3. The
// backfill of upgrade.go then rewrites each height's checksums and
// filterheaders values with their CRCs, computed from the values as they
// are (trusted as far as bbolt's own checks go), and until it passes a
// height a read serves that height's values unchecked, as schema 2 did. A
// schema-1 file takes both steps in the one transaction.
//
// Schema 3 → 4: the CRC32Cs of block headers. Stale values have theirs
// already (schema 3's CRC covers the whole value), so the step only marks
// every active height, 0..tip, for the backfill, which adds each headers
// value's CRC once the header hashes to the block hash beside it and
// leaves the height's other values as they are (they have their CRCs). A
// header that does not hash to its hash gets no CRC: reads take it as
// damaged (a *MismatchError) and Repair rewrites it from the node. Until
// the backfill passes a height, a read checks its header against its hash.
// Older schemas take every step in the one transaction.

// upgradeFromV2 converts a schema-2 file to schema 3 in the write
// transaction tx.
func upgradeFromV2(tx *bolt.Tx) error {
	b, err := openBuckets(tx)
	if err != nil {
		return err
	}
	err = b.rewriteStale(func(hash *chainhash.Hash, v []byte) ([]byte, error) {
		if len(v) <= staleFixedLen || len(v) > staleFixedLen+MaxFilterSize {
			return nil, fmt.Errorf("%w: schema 2 stale value for %s is %d bytes", ErrCorrupt, hash, len(v))
		}
		v3 := make([]byte, crcLen+len(v))
		binary.BigEndian.PutUint32(v3, valueCRC(staleSeed(hash), v))
		copy(v3[crcLen:], v)
		return v3, nil
	})
	if err != nil {
		return err
	}
	return b.finishUpgrade(schemaV3)
}

// upgradeFromV3 converts a schema-3 file to schema 4 in the write
// transaction tx.
func upgradeFromV3(tx *bolt.Tx) error {
	b, err := openBuckets(tx)
	if err != nil {
		return err
	}
	return b.finishUpgrade(SchemaVersion)
}

// rewriteStale replaces every stale value with what conv makes of it. The
// values are collected first: a bbolt cursor must not walk a bucket that
// is being written.
func (b *buckets) rewriteStale(conv func(hash *chainhash.Hash, v []byte) ([]byte, error)) error {
	type entry struct {
		hash  chainhash.Hash
		value []byte
	}
	var stale []entry
	err := b.stale.ForEach(func(k, v []byte) error {
		if len(k) != hashLen {
			return fmt.Errorf("%w: stale key of %d bytes", ErrCorrupt, len(k))
		}
		stale = append(stale, entry{chainhash.Hash(k), v})
		return nil
	})
	if err != nil {
		return err
	}
	for _, e := range stale {
		v, err := conv(&e.hash, e.value)
		if err != nil {
			return err
		}
		if err := b.stale.Put(e.hash[:], v); err != nil {
			return fmt.Errorf("rewrite stale %s: %w", e.hash, err)
		}
	}
	return nil
}

// finishUpgrade ends an upgrade step: every height 0..tip is left to the
// background backfill (which computes what the new schema keeps beside each
// value) and the schema version becomes version.
func (b *buckets) finishUpgrade(version uint32) error {
	tip, ok, err := b.readTip()
	if err != nil {
		return err
	}
	if ok {
		if err := b.meta.Put(metaChecksumBackfill, backfillValue(0, tip.Height+1)); err != nil {
			return err
		}
	}
	return b.meta.Put(metaSchemaVersion, heightKey(version))
}
