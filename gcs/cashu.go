package gcs

import (
	"github.com/spaolacci/murmur3"

	internalmurmur3 "github.com/cfindexd/cfindexd/internal/murmur3"
)

// CashuP and CashuM are the default parameters of Cashu compact filters
// (the same values as BIP-158). Cashu filters travel without the CompactSize
// N prefix: N is sent beside the bytes, so use NewFilter and Bytes.
const (
	CashuP = 19
	CashuM = 784931
)

// CashuParams are the default Cashu compact-filter parameters.
var CashuParams = Params{P: CashuP, M: CashuM}

// CashuNUT25Hasher is the Cashu compact-filter hash as deployed in cashu-ts
// and nutshell (NUT-25): h1 = MurmurHash3-x86-32(item, seed 0),
// h2 = MurmurHash3-x86-32(item, seed h1), hash = h1<<32 | h2. It uses
// internal/murmur3, the module's one MurmurHash3-x86-32 (shared with
// package bloom), not spaolacci/murmur3, whose 32-bit walk trips the race
// detector's checkptr.
type CashuNUT25Hasher struct{}

var _ Hasher = CashuNUT25Hasher{}

// Hash64 returns the two-round MurmurHash3-x86-32 hash of item.
func (CashuNUT25Hasher) Hash64(item []byte) uint64 {
	h1 := internalmurmur3.Sum32(item, 0)
	h2 := internalmurmur3.Sum32(item, h1)
	return uint64(h1)<<32 | uint64(h2)
}

// CashuNUT23Hasher is the hash of the NUT-23 compact-filter draft: the low
// 64 bits of MurmurHash3-x64-128(item, seed 0), i.e. the first of the two
// 64-bit words the reference implementation outputs (h1).
type CashuNUT23Hasher struct{}

var _ Hasher = CashuNUT23Hasher{}

// Hash64 returns the first 64-bit word of MurmurHash3-x64-128(item, 0).
func (CashuNUT23Hasher) Hash64(item []byte) uint64 {
	h1, _ := murmur3.Sum128(item)
	return h1
}
