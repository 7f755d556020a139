package store

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

// Schema (version 4).
//
// All buckets are top-level. Heights are uint32 big-endian, so byte order is
// height order and appends go to the right edge of the B+tree. Hashes are 32
// bytes in internal (wire) byte order, the reverse of their display form.
// Headers are the 80-byte wire serialisation. Filters are the BIP-158 wire
// form (CompactSize N, then the Golomb-coded set) and are never empty. A
// checksum is the 4-byte P2P message checksum of the block's cfilter message
// (wireframe.CFilterHasher: the first 4 bytes of dSHA256(0x00 || block hash ||
// CompactSize(len(filter)) || filter)).
//
//	meta
//	    "schema_version" -> uint32 BE                  SchemaVersion; Open upgrades 1..3, refuses others (ErrSchemaVersion)
//	    "genesis"        -> hash[32]                   network's genesis; Open refuses others (ErrWrongNetwork)
//	    "tip"            -> height[4] hash[32] filterheader[32]
//	                                                   absent on an empty store
//	    "checksum_backfill" -> next[4] end[4]          heights next..end-1 may lack a checksum or a crc
//	                                                   (written by an older schema); absent when none do
//	headers        height[4] -> hash[32] header[80] crc[4]
//	                                                   active chain, 0..tip
//	heights        hash[32]  -> height[4]              active chain only
//	filters        height[4] -> filter                 active chain, 0..tip
//	filterheaders  height[4] -> filterheader[32] filterhash[32] crc[4]
//	                                                   active chain, 0..tip
//	checksums      height[4] -> checksum[4] filtercrc[4]
//	                                                   active chain, 0..tip (but the backfill's range)
//	stale          hash[32]  -> crc[4] height[4] header[80] filterheader[32] filterhash[32] checksum[4] filter
//	                                                   disconnected blocks, any number per height
//
// A crc is a CRC32C seeded with the height (checked.go), a filtercrc that
// of the filter XORed with the checksum; in the backfill's range a headers
// or filterheaders value may lack its crc and a checksums value be the
// checksum alone or absent.
//
// Invariants after every commit: headers, filters and filterheaders hold
// exactly the heights 0..tip, and checksums too except heights in the
// checksum_backfill range; heights holds exactly the hashes in headers;
// each header's PrevBlock is the hash at the height below; no hash is both in
// heights and in stale; a stale block's parent is active or stale, at the
// height below. Every filterhash is dSHA256(filter) of its block (the BIP-157
// filter hash), every checksum the cfilter checksum of its block and filter,
// and every filterheader is dSHA256(filterhash || the
// filterheader of the parent), the zero hash standing for genesis's parent,
// in the stale set as on the active chain: CommitBatch computes the first two and
// checks the third before writing, and Rollback moves all three unchanged. A read
// that finds no checksum at an active height outside the backfill's range
// fails with ErrCorrupt.

// SchemaVersion is the on-disk layout version this code writes and reads.
// Bump it on any change to the layout above, and teach Open
// to upgrade the previous version in place (upgrade.go).
const SchemaVersion uint32 = 4

// schemaV1 is the layout before the cfilter checksums (no checksums bucket,
// stale values without a checksum), schemaV2 the one before the CRC32Cs
// (checked.go), schemaV3 the one before the CRC32Cs of block headers.
// Open upgrades all three (upgrade.go, upgradecrc.go).
const (
	schemaV1 uint32 = 1
	schemaV2 uint32 = 2
	schemaV3 uint32 = 3
)

// Bucket names. Every bucket is top-level; the schema above gives their
// keys and values.
var (
	bucketMeta          = []byte("meta")
	bucketHeaders       = []byte("headers")
	bucketHeights       = []byte("heights")
	bucketFilters       = []byte("filters")
	bucketFilterHeaders = []byte("filterheaders")
	bucketStale         = []byte("stale")
	bucketChecksums     = []byte("checksums")

	allBuckets = [][]byte{
		bucketMeta, bucketHeaders, bucketHeights,
		bucketFilters, bucketFilterHeaders, bucketStale,
		bucketChecksums,
	}
)

// Keys of the meta bucket.
var (
	metaSchemaVersion = []byte("schema_version")
	metaGenesis       = []byte("genesis")
	metaTip           = []byte("tip")
	// metaChecksumBackfill is next[4] end[4] (heights, big-endian): the
	// active heights next..end-1 may lack a checksum because they were
	// written by schema 1; absent when none do (upgrade.go).
	metaChecksumBackfill = []byte("checksum_backfill")
)

// Sizes of the fixed-width parts of values.
const (
	heightLen = 4
	hashLen   = chainhash.HashSize
	headerLen = 80 // wire serialisation of a block header
	// headerValueLen is a value of the headers bucket: the block hash,
	// the header, their CRC32C; headerValueLenV3 the value schema 3
	// wrote, without the CRC.
	headerValueLen   = hashLen + headerLen + crcLen
	headerValueLenV3 = hashLen + headerLen
	tipValueLen      = heightLen + 2*hashLen
	// filterHeaderValueLen is a value of the filterheaders bucket: the
	// filter header, the filter hash, their CRC32C; filterHeaderValueLenV2
	// the value schema 2 wrote, without the CRC.
	filterHeaderValueLen   = 2*hashLen + crcLen
	filterHeaderValueLenV2 = 2 * hashLen
	// checksumValueLen is a value of the checksums bucket: the cfilter
	// checksum, then the filter's CRC32C XORed with it (schema 2 wrote the
	// checksum alone).
	checksumValueLen = wireframe.ChecksumSize + crcLen
	// staleFixedLen is the part of a stale value between its CRC32C and
	// the filter.
	staleFixedLen = heightLen + headerLen + 2*hashLen + wireframe.ChecksumSize
	// staleFixedLenV1 is that part in schema 1, which had no checksum.
	staleFixedLenV1 = heightLen + headerLen + 2*hashLen
	// backfillValueLen is the value of meta/checksum_backfill.
	backfillValueLen = 2 * heightLen
)

// MaxFilterSize bounds a stored filter. A BIP-158 basic filter spends
// about 2.6 bytes per distinct script, and a block of at most 4 MB has at
// most some 440,000 outputs and inputs, so no real filter comes near it.
// CommitBatch refuses a larger filter (ErrInvalidRecord) and reads treat
// one as corruption (ErrCorrupt), so a damaged value length can never make
// a read copy gigabytes.
const MaxFilterSize = 4 << 20

// appendFillPercent is the page fill used for the height-keyed buckets.
// Their keys only ever grow at the end (a rollback trims the end), so full
// pages cost nothing on later inserts and halve the file compared with
// bbolt's default split at 50%.
const appendFillPercent = 0.95

// heightKey returns the big-endian key of height, which sorts like the
// integer so cursors walk heights in order.
func heightKey(h uint32) []byte {
	var k [heightLen]byte
	binary.BigEndian.PutUint32(k[:], h)
	return k[:]
}

func decodeHeight(b []byte) (uint32, error) {
	if len(b) != heightLen {
		return 0, fmt.Errorf("%w: height is %d bytes, want %d", ErrCorrupt, len(b), heightLen)
	}
	return binary.BigEndian.Uint32(b), nil
}

// putHeader writes the 80-byte wire serialisation of h into dst.
func putHeader(dst []byte, h *wire.BlockHeader) {
	_ = dst[headerLen-1]
	binary.LittleEndian.PutUint32(dst[0:4], uint32(h.Version))
	copy(dst[4:36], h.PrevBlock[:])
	copy(dst[36:68], h.MerkleRoot[:])
	binary.LittleEndian.PutUint32(dst[68:72], uint32(h.Timestamp.Unix()))
	binary.LittleEndian.PutUint32(dst[72:76], h.Bits)
	binary.LittleEndian.PutUint32(dst[76:80], h.Nonce)
}

// decodeHeader is the inverse of putHeader and matches wire's decoding
// (Timestamp is time.Unix(seconds, 0)). It does not allocate.
func decodeHeader(src []byte) wire.BlockHeader {
	_ = src[headerLen-1]
	var h wire.BlockHeader
	h.Version = int32(binary.LittleEndian.Uint32(src[0:4]))
	copy(h.PrevBlock[:], src[4:36])
	copy(h.MerkleRoot[:], src[36:68])
	h.Timestamp = time.Unix(int64(binary.LittleEndian.Uint32(src[68:72])), 0)
	h.Bits = binary.LittleEndian.Uint32(src[72:76])
	h.Nonce = binary.LittleEndian.Uint32(src[76:80])
	return h
}

func decodeHash(v []byte) (chainhash.Hash, error) {
	if len(v) != hashLen {
		return chainhash.Hash{}, fmt.Errorf("%w: hash is %d bytes, want %d", ErrCorrupt, len(v), hashLen)
	}
	return chainhash.Hash(v), nil
}

// tipValue is the value of meta/tip: height || hash || filter header.
func tipValue(t Tip) []byte {
	v := make([]byte, tipValueLen)
	binary.BigEndian.PutUint32(v, t.Height)
	copy(v[heightLen:], t.Hash[:])
	copy(v[heightLen+hashLen:], t.FilterHeader[:])
	return v
}

func decodeTip(v []byte) (Tip, error) {
	if len(v) != tipValueLen {
		return Tip{}, fmt.Errorf("%w: tip is %d bytes, want %d", ErrCorrupt, len(v), tipValueLen)
	}
	return Tip{
		Height:       binary.BigEndian.Uint32(v),
		Hash:         chainhash.Hash(v[heightLen : heightLen+hashLen]),
		FilterHeader: chainhash.Hash(v[heightLen+hashLen:]),
	}, nil
}

// Offsets of the filter header, filter hash and checksum in a stale value.
const (
	staleFilterHeaderAt = heightLen + headerLen
	staleFilterHashAt   = staleFilterHeaderAt + hashLen
	staleChecksumAt     = staleFilterHashAt + hashLen
)

// staleValue is a value of the stale bucket: CRC32C || height || header ||
// filter header || filter hash || checksum || filter. r.FilterHash must
// already be dSHA256(r.Filter) and sum the cfilter checksum of r.
func staleValue(r *BlockRecord, sum wireframe.Checksum) []byte {
	out := make([]byte, crcLen+staleFixedLen+len(r.Filter))
	v := out[crcLen:]
	binary.BigEndian.PutUint32(v, r.Height)
	putHeader(v[heightLen:], &r.Header)
	copy(v[staleFilterHeaderAt:], r.FilterHeader[:])
	copy(v[staleFilterHashAt:], r.FilterHash[:])
	copy(v[staleChecksumAt:], sum[:])
	copy(v[staleFixedLen:], r.Filter)
	binary.BigEndian.PutUint32(out, valueCRC(staleSeed(&r.Hash), v))
	return out
}

// decodeStale checks and decodes a stale value into a record whose Filter
// aliases v, and the record's cfilter checksum; callers copy the filter
// out before the transaction ends.
func decodeStale(hash chainhash.Hash, v []byte) (BlockRecord, wireframe.Checksum, error) {
	v, err := checkStale(&hash, v)
	if err != nil {
		return BlockRecord{}, wireframe.Checksum{}, err
	}
	if len(v) <= staleFixedLen || len(v) > staleFixedLen+MaxFilterSize {
		return BlockRecord{}, wireframe.Checksum{}, fmt.Errorf("%w: stale value for %s is %d bytes, want %d..%d", ErrCorrupt, hash, len(v), staleFixedLen+1, staleFixedLen+MaxFilterSize)
	}
	return BlockRecord{
		Height:       binary.BigEndian.Uint32(v),
		Hash:         hash,
		Header:       decodeHeader(v[heightLen:]),
		FilterHeader: chainhash.Hash(v[staleFilterHeaderAt:staleFilterHashAt]),
		FilterHash:   chainhash.Hash(v[staleFilterHashAt:staleChecksumAt]),
		Filter:       v[staleFixedLen:],
	}, wireframe.Checksum(v[staleChecksumAt:staleFixedLen]), nil
}

// backfillValue is the value of meta/checksum_backfill: next || end.
func backfillValue(next, end uint32) []byte {
	v := make([]byte, backfillValueLen)
	binary.BigEndian.PutUint32(v, next)
	binary.BigEndian.PutUint32(v[heightLen:], end)
	return v
}

func decodeBackfill(v []byte) (next, end uint32, err error) {
	if len(v) != backfillValueLen {
		return 0, 0, fmt.Errorf("%w: checksum backfill marker is %d bytes, want %d", ErrCorrupt, len(v), backfillValueLen)
	}
	next, end = binary.BigEndian.Uint32(v), binary.BigEndian.Uint32(v[heightLen:])
	if next >= end {
		return 0, 0, fmt.Errorf("%w: checksum backfill marker %d..%d is empty (it is deleted when done)", ErrCorrupt, next, end)
	}
	return next, end, nil
}

// stalePrevAndHeight reads only the height and the header's PrevBlock of a
// stale value, for walking a stale branch without decoding whole records.
func stalePrevAndHeight(hash chainhash.Hash, v []byte) (uint32, chainhash.Hash, error) {
	v, err := checkStale(&hash, v)
	if err != nil {
		return 0, chainhash.Hash{}, err
	}
	if len(v) <= staleFixedLen {
		return 0, chainhash.Hash{}, fmt.Errorf("%w: stale value for %s is %d bytes, want more than %d", ErrCorrupt, hash, len(v), staleFixedLen)
	}
	prevAt := heightLen + 4 // the header's PrevBlock follows its 4-byte version
	return binary.BigEndian.Uint32(v), chainhash.Hash(v[prevAt : prevAt+hashLen]), nil
}
