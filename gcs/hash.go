package gcs

import (
	"encoding/binary"
	"math/bits"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/dchest/siphash"
)

// Hasher maps an item to a full 64-bit hash, before range reduction. Both
// the builder and the matcher of a filter must use the same Hasher.
// Implementations must be deterministic and safe for concurrent use.
type Hasher interface {
	Hash64(item []byte) uint64
}

// SipHasher is SipHash-2-4 with a fixed 128-bit key, the BIP-158 hash.
// Its zero value is SipHash with an all-zero key. Pass a SipHasher held in
// a Hasher variable: converting the 16-byte value to an interface on every
// call allocates.
type SipHasher struct {
	k0, k1 uint64
}

var _ Hasher = SipHasher{}

// NewSipHasher returns SipHash-2-4 keyed with key (read as two little-endian
// 64-bit words, as SipHash specifies).
func NewSipHasher(key [16]byte) SipHasher {
	return SipHasher{
		k0: binary.LittleEndian.Uint64(key[0:8]),
		k1: binary.LittleEndian.Uint64(key[8:16]),
	}
}

// Hash64 returns SipHash-2-4(key, item).
func (s SipHasher) Hash64(item []byte) uint64 {
	return siphash.Hash(s.k0, s.k1, item)
}

// BlockKey returns the BIP-158 SipHash key of a block: the first 16 bytes of
// its hash in internal (little-endian, not display) byte order.
func BlockKey(blockHash chainhash.Hash) [16]byte {
	var k [16]byte
	copy(k[:], blockHash[:16])
	return k
}

// HashToRange maps a 64-bit hash uniformly onto [0, nm) as the high word of
// the 128-bit product h·nm (BIP-158 "hash_to_range"; Lemire's fast range
// reduction). It is monotone in h. nm = 0 yields 0.
func HashToRange(h, nm uint64) uint64 {
	hi, _ := bits.Mul64(h, nm)
	return hi
}
