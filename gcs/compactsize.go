package gcs

import (
	"encoding/binary"
	"fmt"
)

// appendCompactSize appends Bitcoin's CompactSize encoding of v to dst.
func appendCompactSize(dst []byte, v uint64) []byte {
	switch {
	case v < 0xfd:
		return append(dst, byte(v))
	case v <= 0xffff:
		return binary.LittleEndian.AppendUint16(append(dst, 0xfd), uint16(v))
	case v <= 0xffffffff:
		return binary.LittleEndian.AppendUint32(append(dst, 0xfe), uint32(v))
	default:
		return binary.LittleEndian.AppendUint64(append(dst, 0xff), v)
	}
}

// compactSizeLen is the encoded length of v.
func compactSizeLen(v uint64) int {
	switch {
	case v < 0xfd:
		return 1
	case v <= 0xffff:
		return 3
	case v <= 0xffffffff:
		return 5
	default:
		return 9
	}
}

// readCompactSize decodes a canonical CompactSize from the front of b and
// returns the value and the number of bytes consumed.
func readCompactSize(b []byte) (uint64, int, error) {
	if len(b) == 0 {
		return 0, 0, fmt.Errorf("CompactSize N: empty input: %w", ErrTruncated)
	}
	var size int
	var min uint64
	switch b[0] {
	case 0xfd:
		size, min = 3, 0xfd
	case 0xfe:
		size, min = 5, 0x10000
	case 0xff:
		size, min = 9, 0x100000000
	default:
		return uint64(b[0]), 1, nil
	}
	if len(b) < size {
		return 0, 0, fmt.Errorf("CompactSize N: need %d bytes, have %d: %w", size, len(b), ErrTruncated)
	}
	var v uint64
	switch size {
	case 3:
		v = uint64(binary.LittleEndian.Uint16(b[1:]))
	case 5:
		v = uint64(binary.LittleEndian.Uint32(b[1:]))
	default:
		v = binary.LittleEndian.Uint64(b[1:])
	}
	if v < min {
		return 0, 0, fmt.Errorf("CompactSize N=%d in %d bytes: %w", v, size, ErrNonCanonicalN)
	}
	return v, size, nil
}
