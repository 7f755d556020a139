package bloom

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/murmur3"
)

// updateMask selects the update mode from nFlags (BLOOM_UPDATE_MASK); the
// other six bits are reserved and ignored, as Core ignores them.
const updateMask = 3

// outPointSize is a serialized outpoint: txid (internal byte order), then
// the output index as a little-endian uint32.
const outPointSize = chainhash.HashSize + 4

// Filter is a BIP-37 Bloom filter: the bytes of a filterload, its number
// of hash functions, tweak and nFlags. Element e sets (or tests) bit
// MurmurHash3(i·0xFBA4C795 + tweak, e) mod (8·len) for i in 0..k−1, bit b
// being bit b&7 of byte b>>3.
//
// Matching follows Bitcoin Core v31 exactly, including its short-cuts: a
// filter of zero bytes matches everything and ignores inserts (the
// CVE-2013-5700 guard), and a filter with k = 0 contains everything.
//
// A Filter is not safe for concurrent use: MatchTxAndUpdate changes it.
type Filter struct {
	data      []byte
	hashFuncs uint32
	tweak     uint32
	flags     wire.BloomUpdateType
	// hashes counts the element hashes computed (Hashes).
	hashes uint64
}

// New returns an empty filter with parameters p, tweak and flags (the
// update mode and, as Core keeps them, any reserved bits).
func New(p Params, tweak uint32, flags wire.BloomUpdateType) *Filter {
	return &Filter{data: make([]byte, p.Size), hashFuncs: p.HashFuncs, tweak: tweak, flags: flags}
}

// Load returns the filter a peer sent in filterload, copying its bytes. It
// refuses what Core's IsWithinSizeConstraints refuses: more than
// MaxFilterSize bytes (ErrFilterTooLarge) or more than MaxHashFuncs hash
// functions (ErrTooManyHashFuncs). Any other filter is accepted, including
// the empty one and k = 0, which match everything; whether such a filter is
// acceptable is the server's policy (EstimatedFPR).
func Load(m *wire.MsgFilterLoad) (*Filter, error) {
	if len(m.Filter) > MaxFilterSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrFilterTooLarge, len(m.Filter))
	}
	if m.HashFuncs > MaxHashFuncs {
		return nil, fmt.Errorf("%w: %d", ErrTooManyHashFuncs, m.HashFuncs)
	}
	return &Filter{data: slices.Clone(m.Filter), hashFuncs: m.HashFuncs, tweak: m.Tweak, flags: m.Flags}, nil
}

// MsgFilterLoad returns the filterload message carrying a copy of f.
func (f *Filter) MsgFilterLoad() *wire.MsgFilterLoad {
	return wire.NewMsgFilterLoad(slices.Clone(f.data), f.hashFuncs, f.tweak, f.flags)
}

// Clone returns an independent copy of f.
func (f *Filter) Clone() *Filter {
	c := *f
	c.data = slices.Clone(f.data)
	return &c
}

// Size is the filter's length in bytes.
func (f *Filter) Size() int { return len(f.data) }

// HashFuncs is k.
func (f *Filter) HashFuncs() uint32 { return f.hashFuncs }

// Tweak is nTweak.
func (f *Filter) Tweak() uint32 { return f.tweak }

// Flags is nFlags as sent, reserved bits included.
func (f *Filter) Flags() wire.BloomUpdateType { return f.flags }

// UpdateMode is the update mode in effect: nFlags & 3, as Core reads it.
// The value 3 is not a mode and updates nothing.
func (f *Filter) UpdateMode() wire.BloomUpdateType { return f.flags & updateMask }

// Bytes returns a copy of the filter's bits.
func (f *Filter) Bytes() []byte { return slices.Clone(f.data) }

// bitIndex is the bit hash function i selects for data.
// Hashes returns how many element hashes the filter has computed (one
// per hash function tried: a test stops at the first bit not set, so a
// filter's cost per element is between 1 and HashFuncs, the more the
// fuller it is). It measures matching work in units that do not depend
// on the machine's load.
func (f *Filter) Hashes() uint64 { return f.hashes }

func (f *Filter) bitIndex(i uint32, data []byte) uint32 {
	f.hashes++
	return murmur3.Sum32(data, i*hashNumMultiplier+f.tweak) % (uint32(len(f.data)) * 8)
}

// Insert adds data. On a zero-byte filter it does nothing (Core's guard
// against CVE-2013-5700's division by zero).
func (f *Filter) Insert(data []byte) {
	if len(f.data) == 0 {
		return
	}
	for i := range f.hashFuncs {
		idx := f.bitIndex(i, data)
		f.data[idx>>3] |= 1 << (idx & 7)
	}
}

// insertCounting is Insert, returning how many bits it newly set.
func (f *Filter) insertCounting(data []byte) int {
	if len(f.data) == 0 {
		return 0
	}
	added := 0
	for i := range f.hashFuncs {
		idx := f.bitIndex(i, data)
		mask := byte(1) << (idx & 7)
		if f.data[idx>>3]&mask == 0 {
			f.data[idx>>3] |= mask
			added++
		}
	}
	return added
}

// Contains reports whether data may have been inserted: always true for
// inserted data, and for a zero-byte filter or k = 0.
func (f *Filter) Contains(data []byte) bool {
	if len(f.data) == 0 {
		return true
	}
	for i := range f.hashFuncs {
		idx := f.bitIndex(i, data)
		if f.data[idx>>3]&(1<<(idx&7)) == 0 {
			return false
		}
	}
	return true
}

// InsertOutPoint adds the serialized outpoint (txid, then the index as a
// little-endian uint32), as BLOOM_UPDATE_ALL does and wallets do for the
// outputs they own.
func (f *Filter) InsertOutPoint(op wire.OutPoint) {
	var buf [outPointSize]byte
	f.Insert(serializeOutPoint(&buf, op.Hash, op.Index))
}

// ContainsOutPoint reports whether the serialized outpoint may be in f.
func (f *Filter) ContainsOutPoint(op wire.OutPoint) bool {
	var buf [outPointSize]byte
	return f.Contains(serializeOutPoint(&buf, op.Hash, op.Index))
}

func serializeOutPoint(buf *[outPointSize]byte, txid chainhash.Hash, index uint32) []byte {
	copy(buf[:chainhash.HashSize], txid[:])
	binary.LittleEndian.PutUint32(buf[chainhash.HashSize:], index)
	return buf[:]
}

// FilterAdd is filteradd: it inserts data, or refuses an element longer
// than MaxFilterAddSize (ErrElementTooLarge), which Core treats as
// misbehaviour. (A filteradd without a loaded filter, also misbehaviour in
// Core, is for the caller to detect: it has no Filter to call.)
func (f *Filter) FilterAdd(data []byte) error {
	if len(data) > MaxFilterAddSize {
		return fmt.Errorf("%w: %d bytes", ErrElementTooLarge, len(data))
	}
	f.Insert(data)
	return nil
}

// MatchesAll reports whether f matches every transaction whatever it
// holds: a zero-byte filter or k = 0 (Core's "match-all" filters), or
// every bit set.
func (f *Filter) MatchesAll() bool {
	if len(f.data) == 0 || f.hashFuncs == 0 {
		return true
	}
	for _, b := range f.data {
		if b != 0xff {
			return false
		}
	}
	return true
}

// Fill is the fraction of the filter's bits that are set (1 for a
// zero-byte filter, which behaves as if full).
func (f *Filter) Fill() float64 {
	if len(f.data) == 0 {
		return 1
	}
	return float64(f.setBits()) / float64(len(f.data)*8)
}

// setBits counts the bits set.
func (f *Filter) setBits() int {
	n := 0
	i := 0
	for ; i+8 <= len(f.data); i += 8 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(f.data[i:]))
	}
	for ; i < len(f.data); i++ {
		n += bits.OnesCount8(f.data[i])
	}
	return n
}

// EstimatedFPR is the false-positive rate a server can infer from the
// filter alone, not knowing how many elements it holds: fill^k, the chance
// that k independent bit positions are all set. It is 1 for the filters
// that match everything (zero bytes, k = 0). A wallet sizing its filter
// well has a fill near ½, so this is about 2^−k.
func (f *Filter) EstimatedFPR() float64 {
	if len(f.data) == 0 || f.hashFuncs == 0 {
		return 1
	}
	return math.Pow(f.Fill(), float64(f.hashFuncs))
}

// EstimatedElements estimates how many distinct elements produced the
// filter's fill: n ≈ −(m/k)·ln(1 − fill) (+Inf when every bit is set, 0
// for k = 0 or a zero-byte filter). A server can hold a peer to a budget of
// watched elements with it; noise counts as elements.
func (f *Filter) EstimatedElements() float64 {
	if len(f.data) == 0 || f.hashFuncs == 0 {
		return 0
	}
	fill := f.Fill()
	if fill >= 1 {
		return math.Inf(1)
	}
	return -float64(len(f.data)*8) / float64(f.hashFuncs) * math.Log(1-fill)
}
