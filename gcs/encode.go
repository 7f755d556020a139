package gcs

import (
	"encoding/binary"
	"slices"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// streamBits returns the exact number of bits the Golomb-Rice stream of the
// sorted recs takes: N·(P+1) plus the sum of the unary quotients.
func streamBits(recs []hashRec, p uint8, nm uint64) uint64 {
	total := uint64(len(recs)) * (uint64(p) + 1)
	var last uint64
	for _, r := range recs {
		v := HashToRange(r.h, nm)
		total += (v - last) >> p
		last = v
	}
	return total
}

// appendFilter appends CompactSize N (N = len(recs)) and the Golomb-Rice
// stream of the range values of recs (which must be sorted by hash) to dst,
// zero-padded to a byte. It grows dst at most once.
func appendFilter(dst []byte, recs []hashRec, p uint8, nm uint64) []byte {
	n := uint64(len(recs))
	// Sum of quotients ≤ (largest value >> P) ≤ nm >> P, so this bound is
	// tight for sane parameters; fall back to an exact pass otherwise so
	// odd (P, M) never over-allocate.
	var nbits uint64
	if q := nm >> p; q <= 4*n+64 {
		nbits = n*(uint64(p)+1) + q
	} else {
		nbits = streamBits(recs, p, nm)
	}
	dst = slices.Grow(dst, wirescan.CompactSizeLen(n)+int((nbits+7)/8)+8)
	dst = wirescan.AppendCompactSize(dst, n)

	var (
		acc  uint64 // pending bits, left-aligned
		nacc uint   // number of pending bits, < 32 between writes
		last uint64
	)
	pw := uint(p)
	mask := uint64(1)<<pw - 1
	for _, r := range recs {
		v := HashToRange(r.h, nm)
		d := v - last
		last = v
		q := d >> pw
		if q+1+uint64(pw) <= 32 {
			// Common case: quotient ones, a zero, then the remainder,
			// in one write.
			w := uint(q) + 1 + pw
			bitsv := (uint64(1)<<(uint(q)+1)-2)<<pw | d&mask
			acc |= bitsv << (64 - nacc - w)
			nacc += w
			if nacc >= 32 {
				dst = binary.BigEndian.AppendUint32(dst, uint32(acc>>32))
				acc <<= 32
				nacc -= 32
			}
			continue
		}
		for q >= 32 {
			acc |= uint64(0xffffffff) << (32 - nacc)
			dst = binary.BigEndian.AppendUint32(dst, uint32(acc>>32))
			acc <<= 32
			q -= 32
		}
		w := uint(q) + 1
		acc |= (uint64(1)<<w - 2) << (64 - nacc - w)
		nacc += w
		if nacc >= 32 {
			dst = binary.BigEndian.AppendUint32(dst, uint32(acc>>32))
			acc <<= 32
			nacc -= 32
		}
		acc |= (d & mask) << (64 - nacc - pw)
		nacc += pw
		if nacc >= 32 {
			dst = binary.BigEndian.AppendUint32(dst, uint32(acc>>32))
			acc <<= 32
			nacc -= 32
		}
	}
	for nacc > 0 {
		dst = append(dst, byte(acc>>56))
		acc <<= 8
		if nacc < 8 {
			break
		}
		nacc -= 8
	}
	return dst
}
