package silentpay

import (
	"encoding/binary"
	"fmt"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// minTweakRecord is the smallest serialized tweak record: a one-byte
// transaction index, the point and the value.
const minTweakRecord = 1 + TweakSize + 8

// AppendTweakData appends the canonical serialization of a block's tweaks
// (docs/silent-payments.md, "Tweak data") to dst: CompactSize count, then
// per tweak in block order CompactSize transaction index, the 33-byte
// point and the largest taproot output value as uint64 little endian.
// tweaks must be as Block.Tweaks: strictly increasing indexes, none zero.
func AppendTweakData(dst []byte, tweaks []TxTweak) []byte {
	dst = wirescan.AppendCompactSize(dst, uint64(len(tweaks)))
	for _, t := range tweaks {
		dst = wirescan.AppendCompactSize(dst, uint64(t.TxIndex))
		dst = append(dst, t.Point[:]...)
		dst = binary.LittleEndian.AppendUint64(dst, t.MaxTaprootValue)
	}
	return dst
}

// TweakDataSize is the length of AppendTweakData's serialization of
// tweaks.
func TweakDataSize(tweaks []TxTweak) int {
	n := wirescan.CompactSizeLen(uint64(len(tweaks)))
	for _, t := range tweaks {
		n += wirescan.CompactSizeLen(uint64(t.TxIndex)) + TweakSize + 8
	}
	return n
}

// ParseTweakData reads tweak data as AppendTweakData writes it, from an
// untrusted source (a server a wallet asks): it accepts exactly the
// canonical form (shortest CompactSizes, indexes strictly increasing from
// 1, points with prefix 02 or 03, nothing after the last record) and fails
// otherwise with ErrMalformedTweakData. It allocates for the declared
// count only after checking the bytes can hold it.
func ParseTweakData(b []byte) ([]TxTweak, error) {
	r := wirescan.NewReader(b)
	n, err := r.Count(minTweakRecord)
	if err != nil {
		return nil, fmt.Errorf("%w: count: %w", ErrMalformedTweakData, err)
	}
	tweaks := make([]TxTweak, n)
	prev := uint64(0)
	for i := range tweaks {
		idx, err := r.CompactSize()
		if err != nil {
			return nil, fmt.Errorf("%w: record %d index: %w", ErrMalformedTweakData, i, err)
		}
		if idx <= prev || idx > 1<<32-1 {
			return nil, fmt.Errorf("%w: record %d: transaction index %d after %d", ErrMalformedTweakData, i, idx, prev)
		}
		prev = idx
		rec, err := r.Next(TweakSize + 8)
		if err != nil {
			return nil, fmt.Errorf("%w: record %d: %w", ErrMalformedTweakData, i, err)
		}
		if rec[0] != 0x02 && rec[0] != 0x03 {
			return nil, fmt.Errorf("%w: record %d: point prefix %#x", ErrMalformedTweakData, i, rec[0])
		}
		tweaks[i].TxIndex = uint32(idx)
		copy(tweaks[i].Point[:], rec[:TweakSize])
		tweaks[i].MaxTaprootValue = binary.LittleEndian.Uint64(rec[TweakSize:])
	}
	if err := r.End(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedTweakData, err)
	}
	return tweaks, nil
}
