package bloom

import (
	"fmt"
	"math"
)

// Core's BIP-37 limits (src/common/bloom.h, script/script.h).
const (
	// MaxFilterSize is the largest filter a filterload may carry, in
	// bytes (MAX_BLOOM_FILTER_SIZE): 288,000 bits. The light-client spec's
	// "at most 36,000 bits" is read as this cap.
	MaxFilterSize = 36_000
	// MaxHashFuncs is the most hash functions a filterload may ask for
	// (MAX_HASH_FUNCS).
	MaxHashFuncs = 50
	// MaxFilterAddSize is the longest element a filteradd may carry
	// (MAX_SCRIPT_ELEMENT_SIZE): nothing longer can be a script push.
	MaxFilterAddSize = 520
	// hashNumMultiplier spreads the seeds of the k hash functions: hash
	// function i is MurmurHash3 seeded i·0xFBA4C795 + nTweak (BIP-37).
	hashNumMultiplier = 0xFBA4C795
)

// Params are the size of a filter and its number of hash functions.
type Params struct {
	// Size is the filter's length in bytes (m/8); 1..MaxFilterSize for
	// filters from ParamsFor.
	Size int
	// HashFuncs is k, 1..MaxHashFuncs for filters from ParamsFor.
	HashFuncs uint32
}

// Bits is m, the filter's length in bits.
func (p Params) Bits() int { return p.Size * 8 }

// ExpectedFPR is the false-positive rate of these parameters after n
// distinct elements: (1 − e^(−k·n/m))^k.
func (p Params) ExpectedFPR(n int) float64 {
	return ExpectedFPR(p.HashFuncs, p.Bits(), n)
}

// ParamsFor returns the parameters of a filter for n elements at
// false-positive rate fpr, as BIP-37 sizes them: m = −n·ln(fpr)/ln²2 bits,
// rounded down to whole bytes and capped at MaxFilterSize, then
// k = (m/n)·ln 2 rounded down and capped at MaxHashFuncs. Unlike Core's
// CBloomFilter constructor, m is at least one byte and k at least 1 (Core
// can produce an empty filter or k = 0, both of which match everything),
// and m/n is not an integer division (Core's is, which sometimes gives one
// hash function fewer). n must be ≥ 1 and 0 < fpr < 1 (ErrBadParams).
func ParamsFor(n int, fpr float64) (Params, error) {
	if n < 1 || !(fpr > 0 && fpr < 1) {
		return Params{}, fmt.Errorf("%w: n=%d fpr=%v (want n ≥ 1, 0 < fpr < 1)", ErrBadParams, n, fpr)
	}
	bits := -float64(n) * math.Log(fpr) / (math.Ln2 * math.Ln2)
	bits = math.Min(bits, MaxFilterSize*8)
	size := max(int(bits)/8, 1)
	k := math.Floor(float64(size*8) / float64(n) * math.Ln2)
	k = math.Max(1, math.Min(k, MaxHashFuncs))
	return Params{Size: size, HashFuncs: uint32(k)}, nil
}

// ExpectedFPR is (1 − e^(−k·n/m))^k, the false-positive rate of a filter
// of m bits and k hash functions holding n distinct elements. It is 1 for
// m = 0 or k = 0: such filters match everything in Core.
func ExpectedFPR(k uint32, m, n int) float64 {
	if m <= 0 || k == 0 {
		return 1
	}
	return math.Pow(1-math.Exp(-float64(k)*float64(n)/float64(m)), float64(k))
}
