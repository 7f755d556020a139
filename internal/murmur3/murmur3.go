// Package murmur3 is the module's one MurmurHash3-x86-32 (Austin Appleby's
// reference algorithm): BIP-37 Bloom filters (package bloom) hash with it,
// seeded nHashNum·0xFBA4C795 + nTweak, and so do Cashu's NUT-25 compact
// filters (package gcs, two rounds).
//
// It lives in internal/ rather than in bloom or gcs because neither of those
// packages should depend on the other: a GCS is not a Bloom filter, and a
// hash function shared by two domains belongs to neither. It is written out
// here rather than taken from spaolacci/murmur3, whose Sum32WithSeed walks
// the input with unsafe pointer arithmetic that trips the race detector's
// checkptr (one past the end) and reads words in host byte order (wrong on
// big-endian machines). MurmurHash3-x64-128, which only gcs uses (NUT-23),
// still comes from spaolacci/murmur3: that walk is clean, and a second copy
// of a 128-bit hash with one caller would add code without removing any.
package murmur3

import (
	"encoding/binary"
	"math/bits"
)

// Sum32 returns MurmurHash3-x86-32 of data with seed. Words are read
// little-endian, as the reference implementation does on the x86 it is
// named after and as BIP-37 specifies. It does not allocate.
func Sum32(data []byte, seed uint32) uint32 {
	const (
		c1 = 0xcc9e2d51
		c2 = 0x1b873593
	)
	h := seed
	n := len(data)
	p := data
	for len(p) >= 4 {
		k := binary.LittleEndian.Uint32(p)
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
		p = p[4:]
	}
	var k uint32
	switch len(p) {
	case 3:
		k ^= uint32(p[2]) << 16
		fallthrough
	case 2:
		k ^= uint32(p[1]) << 8
		fallthrough
	case 1:
		k ^= uint32(p[0])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
	}
	h ^= uint32(n)
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}
