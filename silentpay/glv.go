package silentpay

import (
	"math/bits"

	"github.com/consensys/gnark-crypto/ecc/secp256k1"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fp"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fr"
)

// The index's scalar multiplication input_hash·A runs on gnark-crypto's
// secp256k1 field and point arithmetic (64-bit Montgomery limbs), but not
// through G1Jac.ScalarMultiplication: that takes a *big.Int and splits it
// with big.Int arithmetic, 13 allocations a call, where a BlockBuilder may
// allocate per block only (alloc_test.go). The split below is
// libsecp256k1's (secp256k1_scalar_split_lambda) in fixed-width limbs, and
// the multiplication is gnark's own windowed GLV loop (width-5 NAF of both
// halves) without its big.Ints: scalarMult with the odd multiples in
// Jacobian form (ComputeTweak, one transaction), scalarMultTable with them
// in affine form and mixed additions (BlockBuilder, whose tweakBatch
// brings a run of transactions' tables to affine with one inversion; with
// an inversion per table it would be slower). The constants are derived
// and checked in glv_test.go.

// glvWindow is the NAF width: tables of 2^(glvWindow-2) odd multiples.
const glvWindow = 5

// glvDigits bounds a NAF of a 256-bit value, with room for the carry of
// the last digit. The split keeps both halves below 2^128, so their NAFs
// are at most 129 digits; the rest is room that costs nothing, so that
// the multiplication stays right even if a half were larger.
const glvDigits = 258

// glvG1 and glvG2 are round(2^384·b2/n) and round(2^384·(−b1)/n), the
// precomputed estimates of the split, as little-endian limbs.
func glvG1() [4]uint64 {
	return [4]uint64{0xe893209a45dbb031, 0x3daa8a1471e8ca7f, 0xe86c90e49284eb15, 0x3086d221a7d46bcd}
}

func glvG2() [4]uint64 {
	return [4]uint64{0x1571b4ae8ac47f71, 0x221208ac9df506c6, 0x6f547fa90abfe4c4, 0xe4437ed6010e8828}
}

// glvMinusB1, glvMinusB2 and glvMinusLambda are −b1, −b2 and −λ mod n in
// fr's Montgomery form.
func glvMinusB1() fr.Element {
	return fr.Element{0xc50468d00ad9263c, 0x1b1c8205faa6ed42, 0x1571b4ae8ac47f71, 0x221208ac9df506c6}
}

func glvMinusB2() fr.Element {
	return fr.Element{0xcac5e506a144696, 0x1e8a8dc5f3ba5939, 0x176cdf65ba244fce, 0xc25575eb8e173580}
}

func glvMinusLambda() fr.Element {
	return fr.Element{0xcf54734f06a3d4a3, 0x8e1af5392b820bee, 0x8c5699f9ad96826d, 0xacd7bfe87aa729c6}
}

// frRSquare is R² mod n as plain limbs (R = 2^256): multiplying plain
// limbs by it in Montgomery form converts them to Montgomery form.
func frRSquare() fr.Element {
	return fr.Element{0x896cf21467d7d140, 0x741496c20e7cf878, 0xe697f5e45bcd07c6, 0x9d671cd581c69bc5}
}

// fpBeta is β, the cube root of unity with λ·(x, y) = (β·x, y), in fp's
// Montgomery form.
func fpBeta() fp.Element {
	return fp.Element{0x58a4361c8e81894e, 0x3fde1631c4b80af, 0xf8e98978d02e3905, 0x7a4a36aebcbb3d53}
}

// mulShift384 is round(k·g / 2^384) for 256-bit k and g.
func mulShift384(k, g *[4]uint64) [4]uint64 {
	var prod [8]uint64
	for i := range 4 {
		var carry uint64
		for j := range 4 {
			hi, lo := bits.Mul64(k[i], g[j])
			var c uint64
			lo, c = bits.Add64(lo, prod[i+j], 0)
			hi += c
			lo, c = bits.Add64(lo, carry, 0)
			hi += c
			prod[i+j] = lo
			carry = hi
		}
		prod[i+4] = carry
	}
	round := prod[5] >> 63
	var r [4]uint64
	var c uint64
	r[0], c = bits.Add64(prod[6], round, 0)
	r[1], r[2] = bits.Add64(prod[7], 0, c)
	return r
}

// splitScalar splits k (plain limbs; kMont the same scalar in Montgomery
// form) into k1 + k2·λ ≡ k (mod n) with |k1|, |k2| < 2^128, returned as
// magnitudes and signs.
func splitScalar(k *[4]uint64, kMont *fr.Element) (k1, k2 [4]uint64, neg1, neg2 bool) {
	g1, g2 := glvG1(), glvG2()
	c1, c2 := mulShift384(k, &g1), mulShift384(k, &g2)
	rsq, mb1, mb2, ml := frRSquare(), glvMinusB1(), glvMinusB2(), glvMinusLambda()
	e1, e2 := fr.Element(c1), fr.Element(c2)
	e1.Mul(&e1, &rsq).Mul(&e1, &mb1)
	e2.Mul(&e2, &rsq).Mul(&e2, &mb2)
	var r1, r2 fr.Element
	r2.Add(&e1, &e2)
	r1.Mul(&r2, &ml).Add(&r1, kMont)
	k1, neg1 = halfScalar(&r1)
	k2, neg2 = halfScalar(&r2)
	return k1, k2, neg1, neg2
}

// halfScalar returns |r| for r read as a signed residue mod n (negative
// above n/2), which the split keeps below 2^128.
func halfScalar(r *fr.Element) ([4]uint64, bool) {
	if r.LexicographicallyLargest() { // r > (n−1)/2
		var m fr.Element
		m.Neg(r)
		return m.Bits(), true
	}
	return r.Bits(), false
}

// wnaf writes k's width-glvWindow NAF, least significant digit first, into
// naf, negated when neg, and returns its length.
func wnaf(k [4]uint64, neg bool, naf *[glvDigits]int8) int {
	const window = 1 << glvWindow
	var top uint64 // the carry bit above k[3]
	n := 0
	for k[0]|k[1]|k[2]|k[3]|top != 0 {
		var d int8
		if k[0]&1 == 1 {
			m := int64(k[0] & (window - 1))
			if m > window/2 {
				m -= window
			}
			d = int8(m)
			var b uint64
			if m > 0 {
				k[0], b = bits.Sub64(k[0], uint64(m), 0)
				k[1], b = bits.Sub64(k[1], 0, b)
				k[2], b = bits.Sub64(k[2], 0, b)
				k[3], b = bits.Sub64(k[3], 0, b)
				top -= b
			} else {
				k[0], b = bits.Add64(k[0], uint64(-m), 0)
				k[1], b = bits.Add64(k[1], 0, b)
				k[2], b = bits.Add64(k[2], 0, b)
				k[3], b = bits.Add64(k[3], 0, b)
				top += b
			}
		}
		if neg {
			d = -d
		}
		naf[n] = d
		n++
		k[0] = k[0]>>1 | k[1]<<63
		k[1] = k[1]>>1 | k[2]<<63
		k[2] = k[2]>>1 | k[3]<<63
		k[3] = k[3]>>1 | top<<63
		top >>= 1
	}
	return n
}

// glvTableSize is the number of odd multiples in a table.
const glvTableSize = 1 << (glvWindow - 2)

// oddMultiples sets t[i] to (2i+1)·a for a finite affine point a.
func oddMultiples(t *[glvTableSize]secp256k1.G1Jac, a *secp256k1.G1Affine) {
	var twice secp256k1.G1Jac
	t[0].FromAffine(a)
	twice.DoubleMixed(a)
	for i := 1; i < glvTableSize; i++ {
		t[i] = t[i-1]
		t[i].AddAssign(&twice)
	}
}

// scalarMult sets r to k·a for a finite affine point a and a scalar k in
// [1, n) given as plain limbs and in Montgomery form: a's odd multiples
// brought to affine with an inversion of their own, then scalarMultTable
// (a tweakBatch shares that inversion among its transactions).
func scalarMult(r *secp256k1.G1Jac, a *secp256k1.G1Affine, k *[4]uint64, kMont *fr.Element) {
	var tj [glvTableSize]secp256k1.G1Jac
	var ta [glvTableSize]secp256k1.G1Affine
	var pre [glvTableSize]fp.Element
	oddMultiples(&tj, a)
	batchToAffine(ta[:], tj[:], pre[:])
	scalarMultTable(r, &ta, k, kMont)
}

// scalarMultTable sets r to k·a given t1, a's odd multiples in affine
// form (oddMultiples brought to affine), as scalarMult: the GLV split,
// width-5 NAFs of both halves, and mixed additions from t1 and from its
// image under λ, (β·x, y).
func scalarMultTable(r *secp256k1.G1Jac, t1 *[glvTableSize]secp256k1.G1Affine, k *[4]uint64, kMont *fr.Element) {
	k1, k2, neg1, neg2 := splitScalar(k, kMont)
	var naf1, naf2 [glvDigits]int8
	n1, n2 := wnaf(k1, neg1, &naf1), wnaf(k2, neg2, &naf2)
	var t2 [glvTableSize]secp256k1.G1Affine
	beta := fpBeta()
	for i := range t1 {
		t2[i].X.Mul(&t1[i].X, &beta)
		t2[i].Y = t1[i].Y
	}
	var acc secp256k1.G1Jac // Z = 0: the point at infinity
	for i := max(n1, n2) - 1; i >= 0; i-- {
		acc.DoubleAssign()
		if i < n1 {
			addDigitMixed(&acc, t1, naf1[i])
		}
		if i < n2 {
			addDigitMixed(&acc, &t2, naf2[i])
		}
	}
	*r = acc
}

// addDigitMixed adds d·P to acc, where table holds the odd multiples of P
// in affine form.
func addDigitMixed(acc *secp256k1.G1Jac, table *[glvTableSize]secp256k1.G1Affine, d int8) {
	switch {
	case d > 0:
		acc.AddMixed(&table[(d-1)/2])
	case d < 0:
		var neg secp256k1.G1Affine
		neg.X = table[(-d-1)/2].X
		neg.Y.Neg(&table[(-d-1)/2].Y)
		acc.AddMixed(&neg)
	}
}
