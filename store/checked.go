package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

// Checked reads.
//
// bbolt checks the structure of its pages, not the bytes of the values in
// them, so every value a server sends carries a CRC32C (Castagnoli, the
// polynomial the CPU computes in hardware) that each read verifies before
// the value leaves the store:
//
//   - a headers value ends with the CRC32C of its block hash and header;
//   - a filterheaders value ends with the CRC32C of its filter header and
//     filter hash;
//   - a checksums value is the cfilter checksum, then the CRC32C of the
//     filter at that height XORed with that checksum: one CRC pass covers
//     both, and damage to either, or to the CRC, fails it;
//   - a stale value starts with the CRC32C of the rest of it.
//
// Each CRC is seeded with the value's height (the first four bytes of the
// block hash for a stale value), so a value found under another key fails
// too. A CRC32C finds every burst of up to 32 flipped bits and any other
// damage with odds of 2^-32 of missing it, at several GB/s: a mainnet-sized
// filter costs about as much as copying it once, where checking it against
// its filter hash, as Bitcoin Core does, would cost a double SHA-256 of it
// on every read.
//
// Block headers could instead be checked against their stored block hash
// (a header whose double SHA-256 is the hash beside it is intact, and so is
// the hash), with no CRC to store. But that hash costs many times the CRC
// of the same bytes, and every getcfilters answer reads its block hashes
// from the headers bucket, so the hash would cost a large share of serving
// small filters (BenchmarkHeaders2000; docs/performance.md has the
// numbers). So headers carry a CRC like every other value; the block hash
// is checked against the header where a CRC cannot be computed from
// trusted bytes: by the upgrade that
// adds the CRCs (a header that does not hash to its hash gets none, and
// reads take it as damaged), by reads of a header the upgrade has not
// reached yet, and by Repair. A heights value (block hash -> height) is
// checked against the block hash stored at the height it names.
//
// A value that fails its CRC is never returned: the read fails with a
// *MismatchError (errors.Is ErrChecksumMismatch) naming the height, and
// Options.OnMismatch hears of it. Repair rewrites the height from a filter
// rebuilt from the node once it fits the stored filter-header chain.
//
// A store upgraded from an older schema has no CRCs yet: the upgrade
// computes them in the background (upgrade.go) from the values as they
// are, which are trusted as far as bbolt's own checks go (block headers
// only once they hash to their hash), and until then a value without a
// CRC is served unchecked, as it was before (a header checked against its
// hash).

// castagnoli is the CRC32C table; hash/crc32 uses the CPU's instruction
// for it where there is one.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const crcLen = 4

// valueCRC is the CRC32C of v seeded with seed (the value's height).
func valueCRC(seed uint32, v []byte) uint32 {
	return crc32.Update(seed, castagnoli, v)
}

// MismatchError is a stored value that fails its CRC32C: it is not served.
type MismatchError struct {
	// Height is the block's height; for a stale block, the height its
	// value claims.
	Height uint32
	// What names the value: "filter or its cfilter checksum", "filter
	// header and hash", "block header or its hash" (one CRC covers each
	// pair), "height index of block <hash>" or "stale block <hash>".
	What string
	// Stale is true for a block of the stale set (Repair does not fix
	// those).
	Stale bool
	// HeightIndex is true for a heights value (block hash -> height) that
	// names a height where another block hash is stored: Hash is the
	// block, Height what the value says (RepairHeightIndex fixes it).
	HeightIndex bool
	// Hash is the block of a stale or heights value.
	Hash chainhash.Hash
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s at height %d fails its checksum", e.What, e.Height)
}

// Unwrap makes a MismatchError ErrChecksumMismatch.
func (e *MismatchError) Unwrap() error { return ErrChecksumMismatch }

func mismatch(h uint32, what string) error {
	return &MismatchError{Height: h, What: what}
}

// AsMismatch returns the MismatchError inside err, if any.
func AsMismatch(err error) (*MismatchError, bool) {
	var m *MismatchError
	ok := errors.As(err, &m)
	return m, ok
}

// putHeaderCRC writes the CRC32C of the headers value v (hash || header)
// at height h into its last four bytes.
func putHeaderCRC(v []byte, h uint32) {
	binary.BigEndian.PutUint32(v[headerValueLenV3:], valueCRC(h, v[:headerValueLenV3]))
}

// whatHeader names a damaged headers value in a MismatchError.
const whatHeader = "block header or its hash"

// headerAt checks the headers value v at active height h and returns the
// block hash and the 80-byte header, which aliases v.
func (b *buckets) headerAt(h uint32, v []byte) (chainhash.Hash, []byte, error) {
	switch len(v) {
	case headerValueLen:
		if binary.BigEndian.Uint32(v[headerValueLenV3:]) != valueCRC(h, v[:headerValueLenV3]) {
			return chainhash.Hash{}, nil, mismatch(h, whatHeader)
		}
	case headerValueLenV3:
		// No CRC: the backfill has not reached h (then the header must
		// hash to its hash), or found it damaged.
		if !b.uncheckedOK(h) || chainhash.DoubleHashH(v[hashLen:]) != chainhash.Hash(v[:hashLen]) {
			return chainhash.Hash{}, nil, mismatch(h, whatHeader)
		}
	default:
		return chainhash.Hash{}, nil, fmt.Errorf("%w: header value at %d is %d bytes, want %d", ErrCorrupt, h, len(v), headerValueLen)
	}
	return chainhash.Hash(v[:hashLen]), v[hashLen:headerValueLenV3], nil
}

// decodeHeaderAt is headerAt with the header decoded.
func (b *buckets) decodeHeaderAt(h uint32, v []byte) (chainhash.Hash, wire.BlockHeader, error) {
	hash, raw, err := b.headerAt(h, v)
	if err != nil {
		return chainhash.Hash{}, wire.BlockHeader{}, err
	}
	return hash, decodeHeader(raw), nil
}

// filterHeaderValue returns the filterheaders value at height h:
// filter header || filter hash || CRC32C.
func filterHeaderValue(h uint32, filterHeader, filterHash *chainhash.Hash) []byte {
	v := make([]byte, filterHeaderValueLen)
	putFilterHeaderValue(v, h, filterHeader, filterHash)
	return v
}

// putFilterHeaderValue writes the filterheaders value at height h into v.
func putFilterHeaderValue(v []byte, h uint32, filterHeader, filterHash *chainhash.Hash) {
	copy(v, filterHeader[:])
	copy(v[hashLen:], filterHash[:])
	binary.BigEndian.PutUint32(v[2*hashLen:], valueCRC(h, v[:2*hashLen]))
}

// checksumValue returns the checksums value at height h: cfilter checksum
// || (CRC32C of filter XOR checksum).
func checksumValue(h uint32, sum wireframe.Checksum, filter []byte) []byte {
	v := make([]byte, checksumValueLen)
	putChecksumValue(v, h, sum, filter)
	return v
}

// putChecksumValue writes the checksums value at height h into v.
func putChecksumValue(v []byte, h uint32, sum wireframe.Checksum, filter []byte) {
	copy(v, sum[:])
	binary.BigEndian.PutUint32(v[wireframe.ChecksumSize:], valueCRC(h, filter)^binary.BigEndian.Uint32(sum[:]))
}

// uncheckedOK reports whether a value at active height h may lack its CRC:
// the upgrade's backfill has not reached h yet.
func (b *buckets) uncheckedOK(h uint32) bool {
	next, end, pending, err := b.readBackfill()
	return err == nil && pending && h >= next && h < end
}

// filterHeaderAt decodes and checks the filterheaders value v at active
// height h.
func (b *buckets) filterHeaderAt(h uint32, v []byte) (filterHeader, filterHash chainhash.Hash, err error) {
	switch {
	case len(v) == filterHeaderValueLen:
		if binary.BigEndian.Uint32(v[2*hashLen:]) != valueCRC(h, v[:2*hashLen]) {
			return chainhash.Hash{}, chainhash.Hash{}, mismatch(h, "filter header and hash")
		}
	case len(v) == filterHeaderValueLenV2 && b.uncheckedOK(h):
	default:
		return chainhash.Hash{}, chainhash.Hash{}, fmt.Errorf("%w: filter header value at %d is %d bytes, want %d", ErrCorrupt, h, len(v), filterHeaderValueLen)
	}
	return chainhash.Hash(v[:hashLen]), chainhash.Hash(v[hashLen : 2*hashLen]), nil
}

// checkedSum decodes the checksums value v at active height h (nil when
// absent) and checks it and filter, the filter at h, against it. It
// returns the cfilter checksum; for a height the backfill has not reached
// it computes that with ck when none is stored.
func (b *buckets) checkedSum(h uint32, v, filter []byte, hash *chainhash.Hash, ck *wireframe.CFilterHasher) (wireframe.Checksum, error) {
	switch {
	case len(v) == checksumValueLen:
		if binary.BigEndian.Uint32(v[wireframe.ChecksumSize:])^binary.BigEndian.Uint32(v) != valueCRC(h, filter) {
			return wireframe.Checksum{}, mismatch(h, "filter or its cfilter checksum")
		}
		return wireframe.Checksum(v[:wireframe.ChecksumSize]), nil
	case len(v) == wireframe.ChecksumSize && b.uncheckedOK(h):
		return wireframe.Checksum(v), nil
	case v == nil:
		if err := b.checksumFallback(h); err != nil {
			return wireframe.Checksum{}, err
		}
		return ck.Sum(hash, filter), nil
	}
	return wireframe.Checksum{}, fmt.Errorf("%w: checksum value at %d is %d bytes, want %d", ErrCorrupt, h, len(v), checksumValueLen)
}

// checkFilter checks the active filter at height h against its stored
// CRC.
func (b *buckets) checkFilter(h uint32, hash *chainhash.Hash, filter []byte) error {
	var ck wireframe.CFilterHasher
	_, err := b.checkedSum(h, b.checksums.Get(heightKey(h)), filter, hash, &ck)
	return err
}

// staleSeed is the CRC seed of the stale value of hash.
func staleSeed(hash *chainhash.Hash) uint32 { return binary.BigEndian.Uint32(hash[:4]) }

// checkStale checks the CRC of the stale value v of hash and returns the
// value without it.
func checkStale(hash *chainhash.Hash, v []byte) ([]byte, error) {
	if len(v) <= crcLen {
		return nil, fmt.Errorf("%w: stale value for %s is %d bytes", ErrCorrupt, hash, len(v))
	}
	rest := v[crcLen:]
	if binary.BigEndian.Uint32(v) != valueCRC(staleSeed(hash), rest) {
		h := uint32(0)
		if len(rest) >= heightLen {
			h = binary.BigEndian.Uint32(rest)
		}
		return nil, &MismatchError{Height: h, Hash: *hash, What: "stale block " + hash.String(), Stale: true}
	}
	return rest, nil
}
