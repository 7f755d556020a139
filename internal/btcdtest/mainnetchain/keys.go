package mainnetchain

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
)

// keySeqDomain separates the mainnet-shaped generator's keys from the test
// wallet's (keyDomain) for the same seed.
const keySeqDomain = "cfindexd/btcdtest/keyseq/v1"

// keySeq hands out the keys of the mainnet-shaped chain generator: private
// key i is base+i, so public key i is public key i-1 plus G — one point
// addition each instead of a scalar multiplication (a million outputs
// would otherwise spend a minute of CPU on key derivation alone). Points
// are made affine a batch at a time with one field inversion per batch
// (Montgomery's trick). Not safe for concurrent use; key i's private key
// (priv) may be computed from any goroutine.
type keySeq struct {
	base btcec.ModNScalar
	next btcec.JacobianPoint // public key of index count, Jacobian
	g    btcec.JacobianPoint // the generator, Z = 1
	// count is how many keys were handed out; pubs holds the compressed
	// public keys derived so far (at least count), 33 bytes each, back to
	// back.
	count uint32
	pubs  []byte
}

// newKeySeq starts the key sequence of seed.
func newKeySeq(seed int64) *keySeq {
	var buf [len(keySeqDomain) + 8]byte
	copy(buf[:], keySeqDomain)
	binary.BigEndian.PutUint64(buf[len(keySeqDomain):], uint64(seed))
	sum := sha256.Sum256(buf[:])
	s := &keySeq{}
	if overflow := s.base.SetBytes(&sum); overflow != 0 || s.base.IsZero() {
		// A SHA-256 output above the group order has probability ~2^-128.
		panic(fmt.Sprintf("btcdtest: key sequence seed %d gives an invalid scalar", seed))
	}
	btcec.ScalarBaseMultNonConst(&s.base, &s.next)
	btcec.GeneratorJacobian(&s.g)
	return s
}

// keyBatch is how many public keys are derived per field inversion.
const keyBatch = 1024

// take reserves n consecutive keys and returns the index of the first.
func (s *keySeq) take(n int) uint32 {
	first := s.count
	s.count += uint32(n)
	for len(s.pubs) < 33*int(s.count) {
		s.derive(keyBatch)
	}
	return first
}

// derive appends the compressed public keys of the next n indexes.
func (s *keySeq) derive(n int) {
	pts := make([]btcec.JacobianPoint, n)
	for i := range pts {
		pts[i] = s.next
		btcec.AddNonConst(&s.next, &s.g, &s.next)
	}
	// prefix[i] = z_0 * ... * z_i; one inversion of the whole product,
	// then walk back to every z_i^-1.
	prefix := make([]btcec.FieldVal, n)
	prefix[0].Set(&pts[0].Z)
	for i := 1; i < n; i++ {
		prefix[i].Mul2(&prefix[i-1], &pts[i].Z)
	}
	var inv btcec.FieldVal
	inv.Set(&prefix[n-1]).Inverse()
	for i := n - 1; i >= 0; i-- {
		var zInv btcec.FieldVal
		if i > 0 {
			zInv.Mul2(&inv, &prefix[i-1])
			inv.Mul(&pts[i].Z)
		} else {
			zInv.Set(&inv)
		}
		var z2, z3, x, y btcec.FieldVal
		z2.SquareVal(&zInv)
		z3.Mul2(&z2, &zInv)
		x.Mul2(&pts[i].X, &z2).Normalize()
		y.Mul2(&pts[i].Y, &z3).Normalize()
		pts[i].X, pts[i].Y = x, y
	}
	for i := range pts {
		prefixByte := byte(0x02)
		if pts[i].Y.IsOdd() {
			prefixByte = 0x03
		}
		var x [32]byte
		pts[i].X.PutBytes(&x)
		s.pubs = append(s.pubs, prefixByte)
		s.pubs = append(s.pubs, x[:]...)
	}
}

// pub returns key i's 33-byte compressed public key (i < count).
func (s *keySeq) pub(i uint32) []byte {
	return s.pubs[33*int(i) : 33*int(i)+33 : 33*int(i)+33]
}

// priv returns key i's private key, base+i.
func (s *keySeq) priv(i uint32) *btcec.PrivateKey {
	var k btcec.ModNScalar
	k.SetInt(i)
	k.Add(&s.base)
	return btcec.PrivKeyFromScalar(&k)
}

// schnorrSignBIP340 signs the 32-byte message hash with the private key of
// the x-only public key pubX (BIP-340, auxiliary randomness all zero, so
// deterministic). schnorr.Sign derives the public key again on every call;
// the generator knows it already, which halves the cost of a taproot
// key-path signature.
func schnorrSignBIP340(d btcec.ModNScalar, pubOddY bool, pubX []byte, hash []byte) [64]byte {
	if pubOddY {
		d.Negate()
	}
	// t = bytes(d) xor hash_aux(a) with a = 0^32.
	var zero [32]byte
	aux := chainhash.TaggedHash(chainhash.TagBIP0340Aux, zero[:])
	var t [32]byte
	d.PutBytes(&t)
	for i := range t {
		t[i] ^= aux[i]
	}
	rand := chainhash.TaggedHash(chainhash.TagBIP0340Nonce, t[:], pubX, hash)
	var k btcec.ModNScalar
	k.SetBytes((*[32]byte)(rand))
	if k.IsZero() {
		panic("btcdtest: BIP-340 nonce is zero") // probability ~2^-256
	}
	var r btcec.JacobianPoint
	btcec.ScalarBaseMultNonConst(&k, &r)
	r.ToAffine()
	if r.Y.IsOdd() {
		k.Negate()
	}
	var rx [32]byte
	r.X.PutBytes(&rx)
	eHash := chainhash.TaggedHash(chainhash.TagBIP0340Challenge, rx[:], pubX, hash)
	var e btcec.ModNScalar
	e.SetBytes((*[32]byte)(eHash))
	s := new(btcec.ModNScalar).Mul2(&e, &d).Add(&k)
	var sig [64]byte
	copy(sig[:32], rx[:])
	s.PutBytesUnchecked(sig[32:])
	return sig
}
