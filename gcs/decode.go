package gcs

import (
	"fmt"
	"math/bits"
)

// validateStream decodes all n elements of stream once and checks that the
// stream is exactly what an encoder would produce for them: no element is
// cut short, every value is below nm, no whole byte follows the one holding
// the last bit, and the padding bits are zero. Once it passes, decoding the
// stream again can neither fail nor run past its end.
func validateStream(n uint32, p Params, stream []byte) error {
	pw := uint(p.P)
	if n == 0 {
		if len(stream) != 0 {
			return fmt.Errorf("filter of N=0 with %d stream bytes: %w", len(stream), ErrTrailingData)
		}
		return nil
	}
	// Each element takes at least P+1 bits; reject impossible N before
	// decoding anything, so a huge N costs nothing.
	if need := uint64(n) * uint64(pw+1); need > uint64(len(stream))*8 {
		return fmt.Errorf("filter of N=%d needs at least %d bits, stream has %d: %w: %w",
			n, need, uint64(len(stream))*8, ErrNExceedsData, ErrTruncated)
	}
	nm := uint64(n) * p.M
	maxQ := nm >> pw
	r := newBitReader(stream)
	var v uint64
	for i := uint32(0); i < n; i++ {
		var q, rem uint64
		// Fast path as in mergeSorted: the whole code is in buf.
		if r.nbits < 48 {
			r.refill()
		}
		ones := uint(bits.LeadingZeros64(^r.buf))
		if w := ones + 1 + pw; w <= r.nbits {
			q = uint64(ones)
			rem = r.buf << ((ones + 1) & 63) >> ((64 - pw) & 63)
			r.buf <<= w & 63
			r.nbits -= w
		} else {
			var ok bool
			q, rem, ok = r.next(pw)
			if !ok {
				return fmt.Errorf("element %d of %d: %w", i, n, ErrTruncated)
			}
		}
		if q > maxQ {
			return fmt.Errorf("element %d: quotient %d > N·M/2^P: %w", i, q, ErrValueOutOfRange)
		}
		d := q<<pw | rem
		if d >= nm-v {
			return fmt.Errorf("element %d: value %d+%d ≥ N·M=%d: %w", i, v, d, nm, ErrValueOutOfRange)
		}
		v += d
	}
	used := r.consumed()
	usedBytes := (used + 7) / 8
	if uint64(len(stream)) > usedBytes {
		return fmt.Errorf("%d bytes after the last element: %w", uint64(len(stream))-usedBytes, ErrTrailingData)
	}
	if pad := used % 8; pad != 0 {
		if stream[usedBytes-1]&(byte(1)<<(8-pad)-1) != 0 {
			return fmt.Errorf("last byte %#02x: %w", stream[usedBytes-1], ErrNonZeroPadding)
		}
	}
	return nil
}
