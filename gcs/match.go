package gcs

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Match reports whether item is (probably) in the set, hashing it with h,
// which must be the Hasher the filter was built with. False positives occur
// at a rate of about 1/M; false negatives never. It decodes only as far as
// the item's range value. The only error is ErrNilHasher.
func (f *Filter) Match(h Hasher, item []byte) (bool, error) {
	if h == nil {
		return false, fmt.Errorf("match: %w", ErrNilHasher)
	}
	if f.n == 0 {
		return false, nil
	}
	var hv uint64
	if sh, ok := h.(SipHasher); ok {
		hv = sh.Hash64(item)
	} else {
		hv = h.Hash64(item)
	}
	target := [1]uint64{HashToRange(hv, f.nm)}
	return f.mergeSorted(target[:]), nil
}

// matchAnyStack is how many query hashes MatchAny keeps on the stack.
const matchAnyStack = 128

// MatchAny reports whether any of items is (probably) in the set. It hashes
// and sorts the queries once, then walks the stream once, merging the two
// sorted sequences; the set is never materialised. The only error is
// ErrNilHasher.
func (f *Filter) MatchAny(h Hasher, items [][]byte) (bool, error) {
	if h == nil {
		return false, fmt.Errorf("match any: %w", ErrNilHasher)
	}
	if sh, ok := h.(SipHasher); ok {
		return f.matchAnySip(sh, items), nil
	}
	if f.n == 0 || len(items) == 0 {
		return false, nil
	}
	var stack [matchAnyStack]uint64
	qs := stack[:0]
	if len(items) > matchAnyStack {
		qs = make([]uint64, 0, len(items))
	}
	for _, it := range items {
		qs = append(qs, h.Hash64(it))
	}
	return f.mergeQueries(qs), nil
}

// matchAnySip is MatchAny for the SipHash family, without interface calls.
func (f *Filter) matchAnySip(sh SipHasher, items [][]byte) bool {
	if f.n == 0 || len(items) == 0 {
		return false
	}
	var stack [matchAnyStack]uint64
	qs := stack[:0]
	if len(items) > matchAnyStack {
		qs = make([]uint64, 0, len(items))
	}
	for _, it := range items {
		qs = append(qs, sh.Hash64(it))
	}
	return f.mergeQueries(qs)
}

// mergeQueries sorts the query hashes qs, reduces them to range values
// (HashToRange is monotone, so they stay sorted) and merges them with the
// stream.
func (f *Filter) mergeQueries(qs []uint64) bool {
	sortHashes(qs)
	for i, h := range qs {
		qs[i] = HashToRange(h, f.nm)
	}
	return f.mergeSorted(qs)
}

// mergeSorted reports whether the set holds any of the sorted, non-empty
// range values qs. The filter's stream has been validated, so the decode
// needs no error handling; the bit reader is kept in locals so the hot loop
// stays in registers.
func (f *Filter) mergeSorted(qs []uint64) bool {
	data := f.stream()
	p := uint(f.params.P)
	var (
		buf   uint64 // unread bits, left-aligned
		nbits uint   // valid bits in buf
		pos   int    // next byte of data to load
		v     uint64 // current decoded value
	)
	qi := 0
	want := qs[0]
	for i := f.n; i > 0; i-- {
		if nbits < 48 {
			if pos+8 <= len(data) {
				buf |= binary.BigEndian.Uint64(data[pos:]) >> (nbits & 63)
				k := (63 - nbits) >> 3
				pos += int(k)
				nbits += k << 3
			} else {
				for nbits <= 55 && pos < len(data) {
					buf |= uint64(data[pos]) << ((56 - nbits) & 63)
					pos++
					nbits += 8
				}
			}
		}
		// nbits ≤ 63 here, so every shift below is < 64 and the masks
		// only spare the compiler its oversized-shift handling.
		ones := uint(bits.LeadingZeros64(^buf))
		if w := ones + 1 + p; w <= nbits {
			rem := buf << ((ones + 1) & 63) >> ((64 - p) & 63)
			buf <<= w & 63
			nbits -= w
			v += uint64(ones)<<(p&63) | rem
		} else {
			// A long quotient or the end of the stream: take the
			// general path (out of line, to keep this loop small).
			var d uint64
			var ok bool
			d, pos, buf, nbits, ok = slowNext(data, pos, buf, nbits, p)
			if !ok {
				return false // unreachable on a validated stream
			}
			v += d
		}
		for want < v {
			qi++
			if qi == len(qs) {
				return false
			}
			want = qs[qi]
		}
		if want == v {
			return true
		}
	}
	return false
}

// slowNext decodes one element with the general bit reader, for the rare
// codes the fast path of mergeSorted cannot take. ok is false if the data
// runs out, which cannot happen on a validated stream.
//
//go:noinline
func slowNext(data []byte, pos int, buf uint64, nbits uint, p uint) (d uint64, _ int, _ uint64, _ uint, ok bool) {
	r := bitReader{data: data, pos: pos, buf: buf, nbits: nbits}
	q, rem, ok := r.next(p)
	return q<<p | rem, r.pos, r.buf, r.nbits, ok
}
