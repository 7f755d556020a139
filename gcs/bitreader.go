package gcs

import (
	"encoding/binary"
	"math/bits"
)

// bitReader reads a big-endian (MSB-first) bit stream 64 bits at a time.
// buf holds the next unread bits left-aligned; nbits of them are valid. Bits
// of buf below the valid ones are either zero or the true following stream
// bits, so OR-ing a reload over them is harmless.
type bitReader struct {
	data  []byte
	pos   int // next byte of data to load into buf
	buf   uint64
	nbits uint
}

func newBitReader(data []byte) bitReader { return bitReader{data: data} }

// refill tops buf up to 56..63 valid bits, or to the end of data.
func (r *bitReader) refill() {
	if r.pos+8 <= len(r.data) {
		v := binary.BigEndian.Uint64(r.data[r.pos:])
		r.buf |= v >> r.nbits
		n := (63 - r.nbits) >> 3
		r.pos += int(n)
		r.nbits += n << 3
		return
	}
	for r.nbits <= 55 && r.pos < len(r.data) {
		r.buf |= uint64(r.data[r.pos]) << (56 - r.nbits)
		r.pos++
		r.nbits += 8
	}
}

// consumed is the number of bits read so far.
func (r *bitReader) consumed() uint64 { return uint64(r.pos)*8 - uint64(r.nbits) }

// next reads one Golomb-Rice code with remainder width p: the unary
// quotient q and the p-bit remainder. ok is false if the stream ends first.
func (r *bitReader) next(p uint) (q uint64, rem uint64, ok bool) {
	if r.nbits < 40 {
		r.refill()
	}
	for {
		ones := uint(bits.LeadingZeros64(^r.buf))
		if ones < r.nbits {
			q += uint64(ones)
			r.buf <<= ones + 1
			r.nbits -= ones + 1
			break
		}
		// Every valid bit is a one: take them all and reload.
		q += uint64(r.nbits)
		r.buf, r.nbits = 0, 0
		r.refill()
		if r.nbits == 0 {
			return q, 0, false
		}
	}
	if r.nbits < p {
		r.refill()
		if r.nbits < p {
			return q, 0, false
		}
	}
	rem = r.buf >> (64 - p)
	r.buf <<= p
	r.nbits -= p
	return q, rem, true
}
