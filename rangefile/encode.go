package rangefile

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// Record sizes of the fixed-size files.
const (
	BlockHeaderSize  = 80
	FilterHeaderSize = chainhash.HashSize
)

// AppendHeaders appends the 80-byte wire serialization of each header.
func AppendHeaders(dst []byte, hs []wire.BlockHeader) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	for i := range hs {
		if err := hs[i].Serialize(buf); err != nil {
			return dst, fmt.Errorf("serialize header %d of %d: %w", i, len(hs), err)
		}
	}
	return buf.Bytes(), nil
}

// AppendFilterHeaders appends each filter header in internal byte order
// (as in cfheaders).
func AppendFilterHeaders(dst []byte, fhs []chainhash.Hash) []byte {
	for i := range fhs {
		dst = append(dst, fhs[i][:]...)
	}
	return dst
}

// AppendFilter appends one filter record of a filters file: a CompactSize
// length, then the BIP-158 filter in wire form.
func AppendFilter(dst, filter []byte) []byte {
	dst = wirescan.AppendCompactSize(dst, uint64(len(filter)))
	return append(dst, filter...)
}

// Neutrino header-import file format (neutrino v0.18.0 chainimport): a
// 10-byte metadata prefix, then fixed-size headers from the start height
// upward with nothing between them.
const (
	// NeutrinoMetadataSize is chainimport.ImportMetadataSize.
	NeutrinoMetadataSize = 4 + 1 + 1 + 4
	// neutrinoVersion 0 is the only (uncompressed) version neutrino reads.
	neutrinoVersion = 0
	// NeutrinoBlockType and NeutrinoFilterType are headerfs.Block and
	// headerfs.RegularFilter.
	NeutrinoBlockType  = 0
	NeutrinoFilterType = 1
)

// NeutrinoMetadata returns the prefix of a neutrino import file: network
// magic (uint32 LE), version byte, header type byte, start height (uint32
// LE).
func NeutrinoMetadata(net wire.BitcoinNet, headerType byte, start uint32) []byte {
	b := make([]byte, NeutrinoMetadataSize)
	binary.LittleEndian.PutUint32(b[0:4], uint32(net))
	b[4] = neutrinoVersion
	b[5] = headerType
	binary.LittleEndian.PutUint32(b[6:10], start)
	return b
}

// blockDNTypeTweaks is the file type byte of block-dn's tweak files.
const blockDNTypeTweaks = 2

// Tweak is one transaction's silent-payment tweak input_hash·A and the
// largest value among its taproot outputs, which the dust levels compare.
type Tweak struct {
	Point    [33]byte
	MaxValue uint64
}

// AppendBlockDNHeader appends block-dn's 18-byte tweak file header:
// network magic, version 0, type 2, start height, dust level.
func AppendBlockDNHeader(dst []byte, magic, start uint32, dust uint64) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, magic)
	dst = append(dst, 0, blockDNTypeTweaks)
	dst = binary.LittleEndian.AppendUint32(dst, start)
	return binary.LittleEndian.AppendUint64(dst, dust)
}

// AppendBlockDNRecord appends one block's block-dn record: the count and
// the points of the tweaks whose largest taproot output is worth more than
// dust, in transaction order. A height below the silent-payment index's
// first height is the record of a block without tweaks (one zero byte).
func AppendBlockDNRecord(dst []byte, tweaks []Tweak, dust uint64) []byte {
	n := 0
	for i := range tweaks {
		if tweaks[i].MaxValue > dust {
			n++
		}
	}
	dst = wirescan.AppendCompactSize(dst, uint64(n))
	for i := range tweaks {
		if tweaks[i].MaxValue > dust {
			dst = append(dst, tweaks[i].Point[:]...)
		}
	}
	return dst
}
