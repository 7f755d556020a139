package knownhashes

import (
	"math"
	"sync"

	"github.com/dchest/siphash"
)

// bloomFilter is a fixed-size Bloom filter over byte strings, used to
// remember which block hashes a peer already knows so a tip is announced to
// it once. It is not safe for concurrent use.
type bloomFilter struct {
	bits   []uint64
	m      uint64 // number of bits
	k      int    // number of hash functions
	k0, k1 uint64 // SipHash key
	count  int    // items added
}

// bloomParams returns the textbook optimum for n items at false-positive
// rate p: m = ⌈−n·ln p / (ln 2)²⌉ bits and k = round(m/n · ln 2) hashes.
func bloomParams(n int, p float64) (m uint64, k int) {
	mf := math.Ceil(-float64(n) * math.Log(p) / (math.Ln2 * math.Ln2))
	m = uint64(mf)
	k = int(math.Round(mf / float64(n) * math.Ln2))
	if k < 1 {
		k = 1
	}
	return m, k
}

// newBloomFilter sizes a filter for n items at false-positive rate p
// (0 < p < 1, n ≥ 1), keyed by k0, k1 so that an outsider cannot craft
// collisions.
func newBloomFilter(n int, p float64, k0, k1 uint64) *bloomFilter {
	m, k := bloomParams(n, p)
	return &bloomFilter{bits: make([]uint64, (m+63)/64), m: m, k: k, k0: k0, k1: k1}
}

// positions calls fn with the k bit positions of item (Kirsch–Mitzenmacher
// double hashing over the two halves of SipHash-2-4-128); fn returns false
// to stop early.
func (b *bloomFilter) positions(item []byte, fn func(pos uint64) bool) {
	h1, h2 := siphash.Hash128(b.k0, b.k1, item)
	for i := 0; i < b.k; i++ {
		if !fn((h1 + uint64(i)*h2) % b.m) {
			return
		}
	}
}

// Add inserts item.
func (b *bloomFilter) Add(item []byte) {
	b.positions(item, func(pos uint64) bool {
		b.bits[pos/64] |= 1 << (pos % 64)
		return true
	})
	b.count++
}

// Has reports whether item may have been added: never false for an added
// item, true for others with probability about p while count ≤ n.
func (b *bloomFilter) Has(item []byte) bool {
	has := true
	b.positions(item, func(pos uint64) bool {
		if b.bits[pos/64]&(1<<(pos%64)) == 0 {
			has = false
		}
		return has
	})
	return has
}

// Reset empties the filter.
func (b *bloomFilter) Reset() {
	clear(b.bits)
	b.count = 0
}

// Rolling keeps the most recent n to 2n items in two generations of
// bloomFilter: when the current one holds n items it becomes the previous
// one and a cleared filter takes its place, so the false-positive rate stays
// at most about 2p however long the peer stays connected.
//
// It is safe for concurrent use: a peer's reader marks what it sent while
// its ticker announces tips.
type Rolling struct {
	mu         sync.Mutex
	n          int
	cur, older *bloomFilter
}

// NewRolling builds a rolling filter for n recent items at rate p.
func NewRolling(n int, p float64, k0, k1 uint64) *Rolling {
	return &Rolling{
		n:     n,
		cur:   newBloomFilter(n, p, k0, k1),
		older: newBloomFilter(n, p, k1, k0),
	}
}

// Add inserts item.
func (r *Rolling) Add(item []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur.count >= r.n {
		r.cur, r.older = r.older, r.cur
		r.cur.Reset()
	}
	r.cur.Add(item)
}

// Has reports whether item may be among the recent items.
func (r *Rolling) Has(item []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.Has(item) || r.older.Has(item)
}
