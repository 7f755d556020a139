package headers

import (
	"math/big"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// Proof-of-work arithmetic of block headers: the compact target (nBits),
// a block hash as the number compared with it, and a block's work, which
// decides between branches (neutrino sums it above the fork and drops a
// peer that offers less). The formulas are the consensus ones. They are
// written out here rather than taken from btcd's blockchain package, which
// would pull a database and a script engine into the daemon for three
// functions; TestWork holds them to btcd's.

// twoTo256 is 2^256.
var twoTo256 = new(big.Int).Lsh(big.NewInt(1), 256)

// CompactToBig decodes a header's compact target: a 23-bit mantissa, a
// sign bit and a base-256 exponent. The result may be zero or negative,
// which no valid block has.
func CompactToBig(bits uint32) *big.Int {
	mantissa := int64(bits & 0x007fffff)
	exponent := uint(bits >> 24)
	var n *big.Int
	if exponent <= 3 {
		n = big.NewInt(mantissa >> (8 * (3 - exponent)))
	} else {
		n = new(big.Int).Lsh(big.NewInt(mantissa), 8*(exponent-3))
	}
	if bits&0x00800000 != 0 {
		n.Neg(n)
	}
	return n
}

// HashToBig reads a block hash (internal byte order) as the little-endian
// number proof of work compares with the target.
func HashToBig(h *chainhash.Hash) *big.Int {
	var be [chainhash.HashSize]byte
	for i := range be {
		be[i] = h[chainhash.HashSize-1-i]
	}
	return new(big.Int).SetBytes(be[:])
}

// Work returns the expected number of hashes needed to find a block whose
// header has the compact target bits: 2^256 / (target + 1). A target that
// is zero or negative counts as no work.
func Work(bits uint32) *big.Int {
	target := CompactToBig(bits)
	if target.Sign() <= 0 {
		return new(big.Int)
	}
	return target.Div(twoTo256, target.Add(target, big.NewInt(1)))
}
