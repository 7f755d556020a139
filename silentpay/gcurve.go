package silentpay

import (
	"encoding/binary"

	"github.com/consensys/gnark-crypto/ecc/secp256k1"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fp"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fr"
)

// The index side of the package (ComputeTweak, so BlockBuilder) works on
// public block data only and does its curve arithmetic with gnark-crypto,
// about twice as fast here as btcec (docs/performance.md, "Silent-payment
// tweaks"): lifting the input keys, summing them, the input hash's
// A, input_hash·A and its compression. The wallet side (scan.go,
// candidates.go, send.go) multiplies by secret keys and stays on btcec.
// Each transaction enters gnark as key bytes and leaves it as the 33
// tweak bytes: there is no conversion between the two libraries.
//
// gnark's G1Affine.FromJacobian and fp.Element.Inverse go through
// big.Int (a dozen allocations each), so the inversion here is an
// addition chain on fp.Element, as libsecp256k1's.

// fpSeven is the curve's b = 7 in fp's Montgomery form.
func fpSeven() fp.Element { return fp.Element{0x700001ab7, 0, 0, 0} }

// gLiftX sets p to the point with x coordinate x (32 bytes, big endian)
// and the given y parity, reporting false when x is not below the field
// prime or not on the curve: liftX on gnark.
func gLiftX(x []byte, odd bool, p *secp256k1.G1Affine) bool {
	if len(x) != xOnlySize {
		return false
	}
	fx, err := fp.BigEndian.Element((*[xOnlySize]byte)(x))
	if err != nil {
		return false
	}
	var y2, y fp.Element
	b := fpSeven()
	y2.Square(&fx).Mul(&y2, &fx).Add(&y2, &b)
	if y.Sqrt(&y2) == nil {
		return false
	}
	if (y.Bits()[0]&1 == 1) != odd {
		y.Neg(&y)
	}
	p.X, p.Y = fx, y
	return true
}

// fpInverse sets z to 1/x (0 for x = 0) by Fermat, x^(p−2), with
// libsecp256k1's addition chain: p−2 has runs of ones of lengths 223, 22,
// 1, 2 and 1.
func fpInverse(z, x *fp.Element) {
	sqrMul := func(z *fp.Element, n int, m *fp.Element) {
		for range n {
			z.Square(z)
		}
		z.Mul(z, m)
	}
	var x2, x3, x6, x9, x11, x22, x44, x88, x176, x220, x223, t fp.Element
	x2.Square(x).Mul(&x2, x)
	x3.Square(&x2).Mul(&x3, x)
	x6 = x3
	sqrMul(&x6, 3, &x3)
	x9 = x6
	sqrMul(&x9, 3, &x3)
	x11 = x9
	sqrMul(&x11, 2, &x2)
	x22 = x11
	sqrMul(&x22, 11, &x11)
	x44 = x22
	sqrMul(&x44, 22, &x22)
	x88 = x44
	sqrMul(&x88, 44, &x44)
	x176 = x88
	sqrMul(&x176, 88, &x88)
	x220 = x176
	sqrMul(&x220, 44, &x44)
	x223 = x220
	sqrMul(&x223, 3, &x3)
	t = x223
	sqrMul(&t, 23, &x22)
	sqrMul(&t, 5, x)
	sqrMul(&t, 3, &x2)
	sqrMul(&t, 2, x)
	*z = t
}

// gToAffine sets a to p in affine coordinates; the point at infinity
// (Z = 0) becomes (0, 0), as btcec's ToAffine leaves it: batchToAffine of
// one point.
func gToAffine(a *secp256k1.G1Affine, p *secp256k1.G1Jac) {
	src := [1]secp256k1.G1Jac{*p}
	var dst [1]secp256k1.G1Affine
	var pre [1]fp.Element
	batchToAffine(dst[:], src[:], pre[:])
	*a = dst[0]
}

// gSerializeCompressed writes the affine point a in SEC1 compressed form
// (serializeCompressed on gnark).
func gSerializeCompressed(a *secp256k1.G1Affine) [compressedSize]byte {
	var out [compressedSize]byte
	out[0] = 0x02 | byte(a.Y.Bits()[0]&1)
	x := a.X.Bytes()
	copy(out[1:], x[:])
	return out
}

// gScalarFromHash reads a hash as a scalar in plain limbs and in fr's
// Montgomery form, reporting false where BIP-352 fails (scalarFromHash):
// zero, or not below the group order.
func gScalarFromHash(h *[32]byte, k *[4]uint64, kMont *fr.Element) bool {
	e, err := fr.BigEndian.Element(h)
	if err != nil || e.IsZero() {
		return false
	}
	*kMont = e
	for i := range 4 {
		k[i] = binary.BigEndian.Uint64(h[32-8*(i+1):])
	}
	return true
}

// tweakPoint is the curve half of ComputeTweak: given the eligible input
// keys summed in sum (Jacobian, the point at infinity if they cancel) and
// outpoint_L, it returns input_hash·A compressed, or false when the sum
// is the point at infinity or the input hash is not a valid scalar.
// tweakBatch does the same for many transactions with one inversion.
func tweakPoint(sum *secp256k1.G1Jac, outpointL *[outPointSize]byte) ([compressedSize]byte, bool) {
	if sum.Z.IsZero() {
		return [compressedSize]byte{}, false
	}
	var a secp256k1.G1Affine
	gToAffine(&a, sum)
	var k [4]uint64
	var kMont fr.Element
	if !gInputHash(&a, outpointL, &k, &kMont) {
		return [compressedSize]byte{}, false
	}
	var t secp256k1.G1Jac
	scalarMult(&t, &a, &k, &kMont)
	// k is in [1, n) and A finite in a group of prime order n, so t is
	// never the point at infinity; were it, it would serialize as btcec's
	// path does, 02 and 32 zero bytes.
	var ta secp256k1.G1Affine
	gToAffine(&ta, &t)
	return gSerializeCompressed(&ta), true
}

// gInputHash sets k (plain limbs) and kMont (fr's Montgomery form) to
// input_hash = hash_BIP0352/Inputs(outpoint_L || ser_P(A)) for the finite
// affine A and reports whether it is a valid scalar (inputHash on gnark).
func gInputHash(a *secp256k1.G1Affine, outpointL *[outPointSize]byte, k *[4]uint64, kMont *fr.Element) bool {
	var msg [outPointSize + compressedSize]byte
	copy(msg[:], outpointL[:])
	ser := gSerializeCompressed(a)
	copy(msg[outPointSize:], ser[:])
	h := taggedHash(tagInputs, msg[:])
	return gScalarFromHash(&h, k, kMont)
}
