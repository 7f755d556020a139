package wirescan

import (
	"encoding/binary"
	"fmt"
)

// MaxCompactSizeLen is the longest CompactSize: a 0xff prefix and 8 bytes.
const MaxCompactSizeLen = 9

// ReadCompactSize decodes the CompactSize at the front of b and returns its
// value and the number of bytes it took. It refuses an encoding that is not
// the shortest for its value (ErrNonCanonical), as Bitcoin Core and wire do,
// and bytes that end inside it (ErrTruncated). It does not allocate unless
// it fails.
func ReadCompactSize(b []byte) (v uint64, n int, err error) {
	return readCompactSize(b, true)
}

// readCompactSize is ReadCompactSize with the shortest-form rule optional.
func readCompactSize(b []byte, canonical bool) (uint64, int, error) {
	if len(b) == 0 {
		return 0, 0, ErrTruncated
	}
	var size int
	var least uint64
	switch b[0] {
	case 0xfd:
		size, least = 3, 0xfd
	case 0xfe:
		size, least = 5, 0x10000
	case 0xff:
		size, least = 9, 0x100000000
	default:
		return uint64(b[0]), 1, nil
	}
	if len(b) < size {
		return 0, 0, ErrTruncated
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
	if canonical && v < least {
		return 0, 0, fmt.Errorf("%w: %#x in %d bytes", ErrNonCanonical, v, size)
	}
	return v, size, nil
}

// CompactSizeLen is the length of v's (shortest) CompactSize encoding.
func CompactSizeLen(v uint64) int {
	switch {
	case v < 0xfd:
		return 1
	case v <= 0xffff:
		return 3
	case v <= 0xffffffff:
		return 5
	}
	return 9
}

// AppendCompactSize appends v's (shortest) CompactSize encoding to dst.
func AppendCompactSize(dst []byte, v uint64) []byte {
	switch {
	case v < 0xfd:
		return append(dst, byte(v))
	case v <= 0xffff:
		return binary.LittleEndian.AppendUint16(append(dst, 0xfd), uint16(v))
	case v <= 0xffffffff:
		return binary.LittleEndian.AppendUint32(append(dst, 0xfe), uint32(v))
	}
	return binary.LittleEndian.AppendUint64(append(dst, 0xff), v)
}

// PutCompactSize writes v's (shortest) CompactSize encoding at the front of
// dst, which must have room for CompactSizeLen(v) bytes, and returns its
// length.
func PutCompactSize(dst []byte, v uint64) int {
	switch {
	case v < 0xfd:
		dst[0] = byte(v)
		return 1
	case v <= 0xffff:
		dst[0] = 0xfd
		binary.LittleEndian.PutUint16(dst[1:], uint16(v))
		return 3
	case v <= 0xffffffff:
		dst[0] = 0xfe
		binary.LittleEndian.PutUint32(dst[1:], uint32(v))
		return 5
	}
	dst[0] = 0xff
	binary.LittleEndian.PutUint64(dst[1:], v)
	return 9
}
