package gcs

import (
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/dchest/siphash"
)

// BIP-158 basic filter parameters.
const (
	BasicP = 19
	BasicM = 784931
)

// BasicBuilder builds BIP-158 basic filters block after block, reusing its
// buffers so that a steady-state build allocates nothing but the output.
// Its zero value is ready to use. It is NOT safe for concurrent use.
//
// It ignores empty elements, as btcutil's builder.BuildBasicFilter skips
// empty scripts (Build, by contrast, treats an empty item as an item). For
// the same element list it produces exactly the bytes of btcutil's builder
// (WithKeyHash, AddEntry per non-empty element, Build, NBytes).
type BasicBuilder struct {
	arena []byte    // the bytes of every added element, back to back
	ends  []int     // ends[i] is the end of element i in arena
	recs  []hashRec // per-element hash and index
	sort  sorter    // sort scratch, swapped with recs
}

// Reset forgets the added elements, keeping the buffers for the next block.
func (b *BasicBuilder) Reset() {
	b.arena = b.arena[:0]
	b.ends = b.ends[:0]
}

// Add copies element into the builder. Empty elements are ignored, as
// btcutil's BuildBasicFilter skips empty scripts; repeated elements are
// de-duplicated when the filter is built.
func (b *BasicBuilder) Add(element []byte) {
	if len(element) == 0 {
		return
	}
	b.arena = append(b.arena, element...)
	b.ends = append(b.ends, len(b.arena))
}

// Len returns the number of elements added since the last Reset, counting
// repeats.
func (b *BasicBuilder) Len() int { return len(b.ends) }

func (b *BasicBuilder) elem(i uint32) []byte {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.arena[start:b.ends[i]]
}

// AppendFilter appends the BIP-158 wire form of the basic filter of the
// distinct added elements (CompactSize N, then the stream) for the block
// with hash blockHash to dst and returns the extended slice. With no
// elements it appends the single byte 0x00 (N=0). It does not Reset the
// builder. It grows dst at most once. It panics if 2^32 or more elements
// were added (a block cannot hold that many).
func (b *BasicBuilder) AppendFilter(dst []byte, blockHash chainhash.Hash) []byte {
	n := len(b.ends)
	if uint64(n) > 1<<32-1 {
		panic(fmt.Sprintf("gcs: %d elements: %v", n, ErrNTooLarge))
	}
	if cap(b.recs) < n {
		b.recs = make([]hashRec, n, n+n/4)
	}
	recs := b.recs[:n]
	key := NewSipHasher(BlockKey(blockHash))
	start := 0
	for i, end := range b.ends {
		recs[i] = hashRec{h: siphash.Hash(key.k0, key.k1, b.arena[start:end]), idx: uint32(i)}
		start = end
	}
	recs = b.sort.sort(recs)
	b.recs = recs[:0]
	recs = dedupSorted(recs, b.elem)
	nm := uint64(len(recs)) * BasicM
	return appendFilter(dst, recs, BasicP, nm)
}

// BuildBasic returns the BIP-158 basic filter (wire form, with N) of the
// distinct non-empty elements for the block with hash blockHash. It is a
// convenience over BasicBuilder; reuse a BasicBuilder when building many.
func BuildBasic(blockHash chainhash.Hash, elements [][]byte) []byte {
	var b BasicBuilder
	for _, e := range elements {
		b.Add(e)
	}
	return b.AppendFilter(nil, blockHash)
}

// MatchBasic reports whether any of items (probably) belongs to the BIP-158
// basic filter filterWithN (wire form, with N) of the block with hash
// blockHash. filterWithN may be untrusted: it is validated first, and the
// errors are those of NewFilterWithN.
func MatchBasic(filterWithN []byte, blockHash chainhash.Hash, items [][]byte) (bool, error) {
	f, err := parseFilterWithN(BasicParams, filterWithN)
	if err != nil {
		return false, fmt.Errorf("match basic %s: %w", blockHash, err)
	}
	return f.matchAnySip(NewSipHasher(BlockKey(blockHash)), items), nil
}
