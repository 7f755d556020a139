package blockfiles

import (
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/btcec/v2"
)

// Bitcoin Core's on-disk encodings of the undo data (src/serialize.h,
// src/compressor.cpp), read-only: cfindexd never writes Core's files
// (internal/corefiles writes them for tests, with its own encoder).

// errTruncated is what the undo-data readers report when the bytes end
// early.
var errTruncated = errors.New("unexpected end of data")

// errVarIntOverflow is a VARINT wider than its target type.
var errVarIntOverflow = errors.New("VARINT overflows its type")

// readVarInt reads Core's VARINT (serialize.h, "MSB base-128 with the
// continuation bytes offset by one": every byte but the last has the high
// bit set, and each continuation adds one before the shift, so every value
// has exactly one encoding) from b, at most max. It returns the value and
// the bytes used.
func readVarInt(b []byte, max uint64) (uint64, int, error) {
	var n uint64
	for i := 0; i < len(b); i++ {
		if n > max>>7 {
			return 0, 0, errVarIntOverflow
		}
		ch := b[i]
		n = n<<7 | uint64(ch&0x7f)
		if ch&0x80 == 0 {
			if n > max {
				return 0, 0, errVarIntOverflow
			}
			return n, i + 1, nil
		}
		if n == max {
			return 0, 0, errVarIntOverflow
		}
		n++
	}
	return 0, 0, errTruncated
}

// decompressAmount inverts Core's CompressAmount: 0 is 0; otherwise
// x-1 = 10*(9*n + d - 1) + e with the last non-zero digit d and e trailing
// zeros (e < 9), or 10*(n-1) + 9 when e = 9. Garbage wraps around rather
// than failing, as in Core; callers that care bound the result.
func decompressAmount(x uint64) uint64 {
	if x == 0 {
		return 0
	}
	x--
	e := x % 10
	x /= 10
	var n uint64
	if e < 9 {
		d := x%9 + 1
		x /= 9
		n = x*10 + d
	} else {
		n = x + 1
	}
	for ; e > 0; e-- {
		n *= 10
	}
	return n
}

// Compressed script codes (Core's ScriptCompression): 0 P2PKH, 1 P2SH,
// 2/3 P2PK with a compressed key of that prefix, 4/5 P2PK with an
// uncompressed key stored as x with the parity of y in the low bit, and
// n >= 6 a raw script of n-6 bytes.
const (
	scriptCodeP2PKH   = 0
	scriptCodeP2SH    = 1
	numSpecialScripts = 6
	maxScriptSize     = 10000 // MAX_SCRIPT_SIZE
)

// specialScriptPayload is how many bytes follow the code of a special
// (compressed) script.
func specialScriptPayload(code uint64) int {
	if code <= scriptCodeP2SH {
		return 20
	}
	return 32
}

// readCompressedScript reads one compressed script from b. Raw scripts
// come back as a subslice of b (raw true); special ones are expanded by
// appending to slab, and the script is the appended part. An overlong raw
// script (more than MAX_SCRIPT_SIZE) becomes OP_RETURN, as Core reads it;
// no spendable output has one. A P2PK key whose x is not on the curve is
// an error (Core never stores one: it compresses only fully valid keys).
func readCompressedScript(b []byte, slab []byte) (script []byte, used int, newSlab []byte, err error) {
	code, n, err := readVarInt(b, 0xffffffff)
	if err != nil {
		return nil, 0, slab, fmt.Errorf("script size: %w", err)
	}
	b = b[n:]
	if code >= numSpecialScripts {
		size := code - numSpecialScripts
		if size > uint64(len(b)) {
			return nil, 0, slab, fmt.Errorf("raw script of %d bytes: %w", size, errTruncated)
		}
		if size > maxScriptSize {
			start := len(slab)
			slab = append(slab, 0x6a) // OP_RETURN
			return slab[start:len(slab):len(slab)], n + int(size), slab, nil
		}
		return b[:size:size], n + int(size), slab, nil
	}
	payload := specialScriptPayload(code)
	if payload > len(b) {
		return nil, 0, slab, fmt.Errorf("compressed script type %d: %w", code, errTruncated)
	}
	p := b[:payload]
	start := len(slab)
	switch code {
	case scriptCodeP2PKH:
		slab = append(slab, 0x76, 0xa9, 0x14)
		slab = append(slab, p...)
		slab = append(slab, 0x88, 0xac)
	case scriptCodeP2SH:
		slab = append(slab, 0xa9, 0x14)
		slab = append(slab, p...)
		slab = append(slab, 0x87)
	case 2, 3:
		slab = append(slab, 0x21, byte(code))
		slab = append(slab, p...)
		slab = append(slab, 0xac)
	case 4, 5:
		var compressed [33]byte
		compressed[0] = byte(code - 2)
		copy(compressed[1:], p)
		key, perr := btcec.ParsePubKey(compressed[:])
		if perr != nil {
			return nil, 0, slab, fmt.Errorf("compressed script type %d: x is not on the curve: %v", code, perr)
		}
		slab = append(slab, 0x41)
		slab = append(slab, key.SerializeUncompressed()...)
		slab = append(slab, 0xac)
	}
	return slab[start:len(slab):len(slab)], n + payload, slab, nil
}
