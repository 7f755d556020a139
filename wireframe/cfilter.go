package wireframe

import (
	"crypto/sha256"
	"hash"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// basicFilterType is BIP-158's basic filter type, the first byte of a
// cfilter payload.
const basicFilterType = 0x00

// CFilterPrefixLen returns the length of the part of a cfilter payload
// before a filter of filterLen bytes: the filter type, the block hash and
// the filter's length as a CompactSize.
func CFilterPrefixLen(filterLen int) int {
	return 1 + chainhash.HashSize + wirescan.CompactSizeLen(uint64(filterLen))
}

// PutCFilterPrefix writes the part of a cfilter payload before a filter of
// filterLen bytes into dst (at least CFilterPrefixLen(filterLen) bytes) and
// returns its length: the basic filter type, the block hash in internal
// byte order, and filterLen as a CompactSize. The payload is this prefix
// followed by the filter, which is also Bitcoin Core's serialized
// BlockFilter (a REST blockfilter .bin answer).
func PutCFilterPrefix(dst []byte, blockHash *chainhash.Hash, filterLen int) int {
	dst[0] = basicFilterType
	copy(dst[1:1+chainhash.HashSize], blockHash[:])
	return 1 + chainhash.HashSize + wirescan.PutCompactSize(dst[1+chainhash.HashSize:], uint64(filterLen))
}

// CFilterHasher computes the message checksum of the cfilter message
// carrying a filter (BIP-158 wire form) for a block: the first 4 bytes of
// dSHA256(0x00 || blockHash || CompactSize(len(filter)) || filter). The
// store keeps it for every filter so that a server can send a cfilter
// without hashing; Sum is its definition. The hasher reuses one SHA-256
// state: the zero value is ready; it is not safe for concurrent use.
type CFilterHasher struct {
	d hash.Hash
}

// Sum returns the checksum of the cfilter message carrying filter for
// blockHash.
func (c *CFilterHasher) Sum(blockHash *chainhash.Hash, filter []byte) Checksum {
	if c.d == nil {
		c.d = sha256.New()
	}
	var prefix [1 + chainhash.HashSize + wirescan.MaxCompactSizeLen]byte
	n := PutCFilterPrefix(prefix[:], blockHash, len(filter))
	c.d.Reset()
	c.d.Write(prefix[:n])
	c.d.Write(filter)
	var first [sha256.Size]byte
	c.d.Sum(first[:0])
	second := sha256.Sum256(first[:])
	return Checksum(second[:ChecksumSize])
}
