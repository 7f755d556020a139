package silentpay

import (
	"math/big"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fp"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fr"
)

func hexInt(t testing.TB, s string) *big.Int {
	t.Helper()
	v, ok := new(big.Int).SetString(s, 16)
	if !ok {
		t.Fatalf("bad hex %q", s)
	}
	return v
}

// The GLV basis of secp256k1 (Hankerson, Menezes, Vanstone, and
// libsecp256k1): λ with λ³ ≡ 1 (mod n), β with β³ ≡ 1 (mod p), and
// (a1, b1), (a2, b2) short vectors of the lattice {(a, b): a + b·λ ≡ 0}.
const (
	glvLambdaHex  = "5363ad4cc05c30e0a5261c028812645a122e22ea20816678df02967c1b23bd72"
	glvBetaHex    = "7ae96a2b657c07106e64479eac3434e99cf0497512f58995c1396c28719501ee"
	glvA1Hex      = "3086d221a7d46bcde86c90e49284eb15"
	glvMinusB1Hex = "e4437ed6010e88286f547fa90abfe4c3"
	glvA2Hex      = "114ca50f7a8e2f3f657c1108d9d44cfd8"
)

func limbsInt(l [4]uint64) *big.Int {
	v := new(big.Int)
	for i := 3; i >= 0; i-- {
		v.Lsh(v, 64).Or(v, new(big.Int).SetUint64(l[i]))
	}
	return v
}

// TestGLVConstantsAreDerived derives every constant glv.go and gcurve.go
// hard-code from the basis and checks the basis itself, so none is a
// number taken on trust.
func TestGLVConstantsAreDerived(t *testing.T) {
	n, p := fr.Modulus(), fp.Modulus()
	lambda, beta := hexInt(t, glvLambdaHex), hexInt(t, glvBetaHex)
	a1, mb1, a2 := hexInt(t, glvA1Hex), hexInt(t, glvMinusB1Hex), hexInt(t, glvA2Hex)
	b1, b2 := new(big.Int).Neg(mb1), a1
	three := big.NewInt(3)
	if new(big.Int).Exp(lambda, three, n).Cmp(big.NewInt(1)) != 0 || new(big.Int).Exp(beta, three, p).Cmp(big.NewInt(1)) != 0 {
		t.Fatal("λ or β is not a cube root of unity")
	}
	for _, v := range [][2]*big.Int{{a1, b1}, {a2, b2}} {
		r := new(big.Int).Mul(v[1], lambda)
		if r.Add(r, v[0]).Mod(r, n).Sign() != 0 {
			t.Fatalf("(%x, %x) is not in the lattice", v[0], v[1])
		}
	}
	if det := new(big.Int).Sub(new(big.Int).Mul(a1, b2), new(big.Int).Mul(a2, b1)); det.Cmp(n) != 0 {
		t.Fatalf("basis determinant %x, want n", det)
	}
	// λ·G = (β·Gx, Gy) pairs the two roots.
	var k btcec.ModNScalar
	k.SetByteSlice(lambda.Bytes())
	var lg btcec.JacobianPoint
	btcec.ScalarBaseMultNonConst(&k, &lg)
	lg.ToAffine()
	gen := btcec.Generator()
	want := new(big.Int).Mod(new(big.Int).Mul(beta, gen.X()), p)
	if x, y := lg.X.Bytes(), lg.Y.Bytes(); new(big.Int).SetBytes(x[:]).Cmp(want) != 0 || new(big.Int).SetBytes(y[:]).Cmp(gen.Y()) != 0 {
		t.Fatal("λ·G is not (β·Gx, Gy)")
	}
	round := func(num *big.Int) *big.Int {
		q, r := new(big.Int).QuoRem(num, n, new(big.Int))
		if r.Lsh(r, 1).Cmp(n) >= 0 {
			q.Add(q, big.NewInt(1))
		}
		return q
	}
	two384 := new(big.Int).Lsh(big.NewInt(1), 384)
	frOf := func(v *big.Int) fr.Element {
		var e fr.Element
		e.SetBigInt(new(big.Int).Mod(v, n))
		return e
	}
	var fpB, fp7 fp.Element
	fpB.SetBigInt(beta)
	fp7.SetUint64(7)
	r := new(big.Int).Lsh(big.NewInt(1), 256)
	checks := []struct {
		name      string
		got, want any
	}{
		{"g1", limbsInt(glvG1()).String(), round(new(big.Int).Mul(two384, b2)).String()},
		{"g2", limbsInt(glvG2()).String(), round(new(big.Int).Mul(two384, mb1)).String()},
		{"−b1", glvMinusB1(), frOf(mb1)},
		{"−b2", glvMinusB2(), frOf(new(big.Int).Neg(b2))},
		{"−λ", glvMinusLambda(), frOf(new(big.Int).Neg(lambda))},
		{"R² mod n", limbsInt(frRSquare()).String(), new(big.Int).Mod(new(big.Int).Mul(r, r), n).String()},
		{"β", fpBeta(), fpB},
		{"7", fpSeven(), fp7},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: hard-coded %v, derived %v", c.name, c.got, c.want)
		}
	}
}

// TestSplitScalarIsShortAndExact: k1 + k2·λ ≡ k with both halves below
// 2^128, for the scalars at the edges and 2,000 from a fixed seed.
func TestSplitScalarIsShortAndExact(t *testing.T) {
	n := fr.Modulus()
	lambda := hexInt(t, glvLambdaHex)
	g := newTxGen(352)
	var ks []*big.Int
	for _, v := range []int64{1, 2, 3} {
		ks = append(ks, big.NewInt(v), new(big.Int).Sub(n, big.NewInt(v)))
	}
	half := new(big.Int).Rsh(n, 1)
	ks = append(ks, lambda, new(big.Int).Sub(n, lambda), half, new(big.Int).Add(half, big.NewInt(1)),
		new(big.Int).Lsh(big.NewInt(1), 128), new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1)))
	for range 2000 {
		ks = append(ks, new(big.Int).Mod(new(big.Int).SetBytes(g.bytes(32)), n))
	}
	bound := new(big.Int).Lsh(big.NewInt(1), 128)
	for _, k := range ks {
		if k.Sign() == 0 {
			continue
		}
		var h [32]byte
		k.FillBytes(h[:])
		var limbs [4]uint64
		var kMont fr.Element
		if !gScalarFromHash(&h, &limbs, &kMont) {
			t.Fatalf("%x: not a scalar", k)
		}
		k1, k2, neg1, neg2 := splitScalar(&limbs, &kMont)
		v1, v2 := limbsInt(k1), limbsInt(k2)
		if v1.Cmp(bound) >= 0 || v2.Cmp(bound) >= 0 {
			t.Fatalf("%x splits into %x, %x: not below 2^128", k, v1, v2)
		}
		if neg1 {
			v1.Neg(v1)
		}
		if neg2 {
			v2.Neg(v2)
		}
		sum := new(big.Int).Mul(v2, lambda)
		if sum.Add(sum, v1).Mod(sum, n).Cmp(k) != 0 {
			t.Fatalf("%x splits into %x + %x·λ", k, v1, v2)
		}
	}
}

// TestWNAFRebuildsItsValue: the digits are odd and below 2^(w−1) in
// magnitude, and sum back to ±k, for edge values and random ones.
func TestWNAFRebuildsItsValue(t *testing.T) {
	g := newTxGen(353)
	cases := [][4]uint64{{1}, {15}, {16}, {17}, {31}, {^uint64(0), ^uint64(0)}, {^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}}
	for range 500 {
		var k [4]uint64
		for i := range k {
			k[i] = g.rng.Uint64()
		}
		cases = append(cases, k)
	}
	for _, k := range cases {
		for _, neg := range []bool{false, true} {
			var naf [glvDigits]int8
			n := wnaf(k, neg, &naf)
			v := new(big.Int)
			for i := n - 1; i >= 0; i-- {
				d := naf[i]
				if d != 0 && (d%2 == 0 || d >= 1<<(glvWindow-1) || d <= -(1<<(glvWindow-1))) {
					t.Fatalf("%x: digit %d", k, d)
				}
				v.Lsh(v, 1).Add(v, big.NewInt(int64(d)))
			}
			if neg {
				v.Neg(v)
			}
			if v.Cmp(limbsInt(k)) != 0 {
				t.Fatalf("%x (neg %v): NAF is %x", k, neg, v)
			}
		}
	}
}

// TestFieldInverse: x·x⁻¹ = 1 for random x and the edges, and 0⁻¹ = 0 as
// btcec has it (the point at infinity maps to (0, 0)).
func TestFieldInverse(t *testing.T) {
	g := newTxGen(354)
	var xs []fp.Element
	var one, pm1 fp.Element
	one.SetOne()
	pm1.Neg(&one)
	xs = append(xs, one, pm1, fpSeven(), fpBeta())
	for range 1000 {
		var x fp.Element
		x.SetBytes(g.bytes(32))
		xs = append(xs, x)
	}
	for _, x := range xs {
		var inv, prod fp.Element
		fpInverse(&inv, &x)
		if !prod.Mul(&inv, &x).IsOne() {
			t.Fatalf("%s·%s ≠ 1", x.String(), inv.String())
		}
	}
	var zero, inv fp.Element
	if fpInverse(&inv, &zero); !inv.IsZero() {
		t.Fatalf("0⁻¹ = %s, want 0", inv.String())
	}
}
