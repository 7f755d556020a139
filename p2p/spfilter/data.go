package spfilter

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// FilterType is the filter type of the silent-payment index. BIP-158
// assigns filter types from 0x00 (basic) upward, and wallets already use
// small numbers informally (BlindBit's JSON calls its taproot filter type
// 4); Bitcoin Core reserves 0xff as its invalid type. A byte with the high
// bit set is outside any range BIP-158 is likely to assign. The risk: no
// registry exists, so another experiment may pick the same byte with
// another meaning; a client therefore asks only servers that advertise
// ServiceFlag, and verifies what it gets against the commitment chain
// (SplitData, DataCommitment) and other servers' checkpoints.
const FilterType wire.FilterType = 0x80

// ServiceFlag is the service bit a server sets in its version message when
// it serves FilterType. BIP-157 has no bit per filter type, and Bitcoin
// Core disconnects a peer that asks for a type it does not know, so a
// client must know before it asks. Bitcoin Core reserves bits 24–31 for
// temporary experiments; this is bit 26. Experimental: another experiment
// may use the same bit, which is why a client also checks the answers.
const ServiceFlag wire.ServiceFlag = 1 << 26

// MaxDataSize bounds a block's cfilter data for FilterType. A valid block
// of 4,000,000 weight units holds fewer than 9,100 transactions with a
// taproot output (each weighs at least about 440), whose tweak data is at
// most 44 bytes each and whose filter spends under 3 bytes a key: under
// 450 KB. Data above the bound is refused on both sides.
const MaxDataSize = 1 << 20

// ErrBadData is wrapped by SplitData's errors.
var ErrBadData = errors.New("malformed silent-payment cfilter data")

// AppendData appends a block's cfilter data to dst:
// CompactSize(len(tweakData)) || tweakData || filter.
func AppendData(dst, tweakData, filter []byte) []byte {
	dst = wirescan.AppendCompactSize(dst, uint64(len(tweakData)))
	dst = append(dst, tweakData...)
	return append(dst, filter...)
}

// DataLen is the length of the cfilter data AppendData writes.
func DataLen(tweakDataLen, filterLen int) int {
	return wirescan.CompactSizeLen(uint64(tweakDataLen)) + tweakDataLen + filterLen
}

// SplitData splits a block's cfilter data into its tweak data and taproot
// filter, both slices of data. It checks the framing only (a shortest
// CompactSize, a length within data, a non-empty filter, at most
// MaxDataSize); silentpay.ParseTweakData checks the tweak data, and
// DataCommitment against cfheaders checks both.
func SplitData(data []byte) (tweakData, filter []byte, err error) {
	if len(data) > MaxDataSize {
		return nil, nil, fmt.Errorf("%w: %d bytes, at most %d", ErrBadData, len(data), MaxDataSize)
	}
	r := wirescan.NewReader(data)
	tweakData, err = r.Bytes()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: tweak data: %w", ErrBadData, err)
	}
	filter = r.Rest()
	if len(filter) == 0 {
		return nil, nil, fmt.Errorf("%w: no taproot filter after %d bytes of tweak data", ErrBadData, len(tweakData))
	}
	return tweakData, filter, nil
}

// DataCommitment returns the commitment hash of a block's cfilter data,
// dSHA256(dSHA256(tweak_data) || dSHA256(taproot_filter)): what cfheaders
// carries as the block's filter hash, and what a client compares a
// received cfilter with (where BIP-157 hashes the filter itself).
func DataCommitment(data []byte) (chainhash.Hash, error) {
	tweakData, filter, err := SplitData(data)
	if err != nil {
		return chainhash.Hash{}, err
	}
	return Commitment(chainhash.DoubleHashH(tweakData), chainhash.DoubleHashH(filter)), nil
}

// Commitment returns dSHA256(tweakHash || filterHash).
func Commitment(tweakHash, filterHash chainhash.Hash) chainhash.Hash {
	var buf [2 * chainhash.HashSize]byte
	copy(buf[:], tweakHash[:])
	copy(buf[chainhash.HashSize:], filterHash[:])
	return chainhash.DoubleHashH(buf[:])
}

// ChainHeader returns the commitment header of a block from its
// commitment hash and the previous block's header: dSHA256(commitment ||
// prev), BIP-157's filter-header rule.
func ChainHeader(commitment, prev chainhash.Hash) chainhash.Hash {
	var buf [2 * chainhash.HashSize]byte
	copy(buf[:], commitment[:])
	copy(buf[chainhash.HashSize:], prev[:])
	first := sha256.Sum256(buf[:])
	return chainhash.Hash(sha256.Sum256(first[:]))
}
