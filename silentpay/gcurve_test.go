package silentpay

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/consensys/gnark-crypto/ecc/secp256k1"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fp"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fr"
)

// The differential tests below hold the index's gnark-crypto path to
// btcec, the library the package used before and the wallet side still
// uses, on the same inputs: byte for byte, including every refusal.

// btcecComputeTweak is ComputeTweak as it was written on btcec, kept as
// the oracle of the seam.
func btcecComputeTweak(ins []Input, outs []Output) (Tweak, bool) {
	var tw Tweak
	taproot := false
	for i := range outs {
		if IsTaproot(outs[i].Script) {
			taproot = true
			tw.MaxTaprootValue = max(tw.MaxTaprootValue, outs[i].Value)
		}
	}
	if !taproot || len(ins) == 0 {
		return Tweak{}, false
	}
	var sum, p btcec.JacobianPoint
	found := false
	for i := range ins {
		if spendsFutureWitness(ins[i].PrevScript) {
			return Tweak{}, false
		}
		if inputKey(&ins[i], &p) {
			add(&sum, &p)
			found = true
		}
	}
	if !found || isInfinity(&sum) {
		return Tweak{}, false
	}
	sum.ToAffine()
	var s btcec.ModNScalar
	if !inputHash(smallestOutPoint(ins), &sum, &s) {
		return Tweak{}, false
	}
	var t btcec.JacobianPoint
	btcec.ScalarMultNonConst(&s, &sum, &t)
	t.ToAffine()
	tw.Point = serializeCompressed(&t)
	return tw, true
}

// seamPoint is a point lifted by both libraries, or by neither.
type seamPoint struct {
	b btcec.JacobianPoint
	g secp256k1.G1Affine
}

// liftBoth lifts x with both libraries and fails the test unless they
// agree on whether it is a point and on its bytes.
func liftBoth(t *testing.T, x []byte, odd bool) (seamPoint, bool) {
	t.Helper()
	var p seamPoint
	okB, okG := liftX(x, odd, &p.b), gLiftX(x, odd, &p.g)
	if okB != okG {
		t.Fatalf("x %x odd %v: btcec lifts %v, gnark %v", x, odd, okB, okG)
	}
	if okB {
		if b, g := serializeCompressed(&p.b), gSerializeCompressed(&p.g); b != g {
			t.Fatalf("x %x odd %v: btcec %x, gnark %x", x, odd, b, g)
		}
	}
	return p, okB
}

func fieldBytes(v *big.Int) []byte { return v.FillBytes(make([]byte, 32)) }

// TestLiftXAgreesAtTheEdges: x at and above the field prime, x whose
// x³+7 is not a square, and 2,000 random x of both parities lift the same
// in both libraries (about half of random x are off the curve).
func TestLiftXAgreesAtTheEdges(t *testing.T) {
	p := fp.Modulus()
	one := big.NewInt(1)
	var nonResidue []byte
	for i := int64(1); nonResidue == nil; i++ {
		var q btcec.JacobianPoint
		if x := fieldBytes(big.NewInt(i)); !liftX(x, false, &q) {
			nonResidue = x
		}
	}
	cases := []struct {
		name   string
		x      []byte
		liftOK bool
	}{
		{"x = p", fieldBytes(p), false},
		{"x = p + 1", fieldBytes(new(big.Int).Add(p, one)), false},
		{"x = 2^256 − 1", bytes.Repeat([]byte{0xff}, 32), false},
		{"x³+7 not a square", nonResidue, false},
		{"generator", fieldBytes(btcec.Generator().X()), true},
		{"x = p − 1", fieldBytes(new(big.Int).Sub(p, one)), mustLift(fieldBytes(new(big.Int).Sub(p, one)))},
		{"short x", make([]byte, 31), false},
	}
	for _, c := range cases {
		for _, odd := range []bool{false, true} {
			if _, ok := liftBoth(t, c.x, odd); ok != c.liftOK {
				t.Errorf("%s (odd %v): lifted %v, want %v", c.name, odd, ok, c.liftOK)
			}
		}
	}
	g := newTxGen(355)
	lifted := 0
	for range 2000 {
		if _, ok := liftBoth(t, g.bytes(32), g.rng.IntN(2) == 1); ok {
			lifted++
		}
	}
	if lifted < 800 || lifted > 1200 {
		t.Fatalf("%d of 2,000 random x on the curve, want about half", lifted)
	}
}

func mustLift(x []byte) bool {
	var q btcec.JacobianPoint
	return len(x) == 32 && liftX(x, false, &q)
}

// randomPoint returns a point both libraries hold, from the generator's
// random keys.
func randomPoint(t *testing.T, g *txGen) seamPoint {
	t.Helper()
	c := g.key().PubKey().SerializeCompressed()
	p, ok := liftBoth(t, c[1:], c[0] == 0x03)
	if !ok {
		t.Fatal("a public key does not lift")
	}
	return p
}

// TestKeySumsAgree: 2,000 sums of one to five keys, drawn so that many
// repeat a key (gnark doubles) or add its negation (the sum cancels to
// the point at infinity), agree on infinity and on the affine sum.
func TestKeySumsAgree(t *testing.T) {
	g := newTxGen(356)
	infinities := 0
	for range 2000 {
		pool := []seamPoint{randomPoint(t, g), randomPoint(t, g)}
		var sumB btcec.JacobianPoint
		var sumG secp256k1.G1Jac
		for range 1 + g.rng.IntN(5) {
			p := pool[g.rng.IntN(len(pool))]
			if g.rng.IntN(3) == 0 { // its negation
				p.b.Y.Negate(1).Normalize()
				p.g.Y.Neg(&p.g.Y)
			}
			add(&sumB, &p.b)
			sumG.AddMixed(&p.g)
		}
		infB, infG := isInfinity(&sumB), sumG.Z.IsZero()
		if infB != infG {
			t.Fatalf("btcec infinity %v, gnark %v", infB, infG)
		}
		if infB {
			infinities++
			continue
		}
		sumB.ToAffine()
		var a secp256k1.G1Affine
		gToAffine(&a, &sumG)
		if b, gg := serializeCompressed(&sumB), gSerializeCompressed(&a); b != gg {
			t.Fatalf("sum: btcec %x, gnark %x", b, gg)
		}
	}
	if infinities < 100 {
		t.Fatalf("only %d of 2,000 sums cancelled: the edge is not exercised", infinities)
	}
}

// scalarBytes is k mod n as 32 bytes.
func scalarBytes(k *big.Int) [32]byte {
	var h [32]byte
	new(big.Int).Mod(k, fr.Modulus()).FillBytes(h[:])
	return h
}

// TestScalarMultAgrees: k·A by the GLV loop here, one point at a time
// (scalarMult) and given an affine table (scalarMultTable), equals btcec's
// ScalarMultNonConst, compressed, for the edge scalars on the generator
// and on random points, and for 2,000 random scalars and points.
func TestScalarMultAgrees(t *testing.T) {
	n := fr.Modulus()
	g := newTxGen(357)
	lambda := hexInt(t, glvLambdaHex)
	edges := []*big.Int{big.NewInt(1), big.NewInt(2), big.NewInt(3), new(big.Int).Sub(n, big.NewInt(1)),
		new(big.Int).Sub(n, big.NewInt(2)), lambda, new(big.Int).Sub(n, lambda), new(big.Int).Rsh(n, 1),
		new(big.Int).Lsh(big.NewInt(1), 128), new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(31), big.NewInt(32)}
	gen := btcec.Generator().SerializeCompressed()
	genPoint, _ := liftBoth(t, gen[1:], gen[0] == 3)
	type pair struct {
		k [32]byte
		p seamPoint
	}
	var pairs []pair
	for _, k := range edges {
		pairs = append(pairs, pair{scalarBytes(k), genPoint}, pair{scalarBytes(k), randomPoint(t, g)})
	}
	for range 2000 {
		pairs = append(pairs, pair{scalarBytes(new(big.Int).SetBytes(g.bytes(32))), randomPoint(t, g)})
	}
	for _, c := range pairs {
		var s btcec.ModNScalar
		var limbs [4]uint64
		var kMont fr.Element
		okB, okG := scalarFromHash(&c.k, &s), gScalarFromHash(&c.k, &limbs, &kMont)
		if okB != okG || !okB {
			t.Fatalf("scalar %x: btcec %v, gnark %v", c.k, okB, okG)
		}
		var rb btcec.JacobianPoint
		btcec.ScalarMultNonConst(&s, &c.p.b, &rb)
		rb.ToAffine()
		var rg secp256k1.G1Jac
		var ra secp256k1.G1Affine
		scalarMult(&rg, &c.p.g, &limbs, &kMont)
		gToAffine(&ra, &rg)
		if b, gg := serializeCompressed(&rb), gSerializeCompressed(&ra); b != gg {
			t.Fatalf("%x·%x: btcec %x, gnark %x", c.k, serializeCompressed(&c.p.b), b, gg)
		}
		// The same with the odd multiples brought to affine (tweakBatch).
		var tj [glvTableSize]secp256k1.G1Jac
		var ta [glvTableSize]secp256k1.G1Affine
		oddMultiples(&tj, &c.p.g)
		batchToAffine(ta[:], tj[:], make([]fp.Element, glvTableSize))
		scalarMultTable(&rg, &ta, &limbs, &kMont)
		gToAffine(&ra, &rg)
		if b, gg := serializeCompressed(&rb), gSerializeCompressed(&ra); b != gg {
			t.Fatalf("%x·%x with an affine table: btcec %x, gnark %x", c.k, serializeCompressed(&c.p.b), b, gg)
		}
	}
}

// TestScalarFromHashAgrees: the input hash is refused at zero and from n
// up by both readings.
func TestScalarFromHashAgrees(t *testing.T) {
	n := fr.Modulus()
	g := newTxGen(358)
	var hs [][32]byte
	for _, v := range []*big.Int{big.NewInt(0), big.NewInt(1), new(big.Int).Sub(n, big.NewInt(1)), n,
		new(big.Int).Add(n, big.NewInt(1)), new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))} {
		var h [32]byte
		v.FillBytes(h[:])
		hs = append(hs, h)
	}
	for range 2000 {
		hs = append(hs, [32]byte(g.bytes(32)))
	}
	for i, h := range hs {
		var s btcec.ModNScalar
		var limbs [4]uint64
		var kMont fr.Element
		okB, okG := scalarFromHash(&h, &s), gScalarFromHash(&h, &limbs, &kMont)
		if okB != okG {
			t.Fatalf("%x: btcec %v, gnark %v", h, okB, okG)
		}
		if want := i >= 1 && i <= 2 || i >= 6; okB != want {
			t.Fatalf("%x: valid %v, want %v", h, okB, want)
		}
		if okB && (limbsInt(limbs).Cmp(new(big.Int).SetBytes(h[:])) != 0 || kMont.Bytes() != h) {
			t.Fatalf("%x read as %x / %x", h, limbs, kMont.Bytes())
		}
	}
}

// TestComputeTweakAgreesAtTheSeam: transactions built to hit each edge
// where the curve work starts or stops, then 2,000 generated ones, give
// the same tweak (or none) on gnark as on btcec.
func TestComputeTweakAgreesAtTheSeam(t *testing.T) {
	g := newTxGen(359)
	key := g.key().PubKey().SerializeCompressed()
	neg := append([]byte{key[0] ^ 1}, key[1:]...) // the same x, the other y: −P
	other := g.key().PubKey().SerializeCompressed()
	offCurve := append([]byte{2}, bytes.Repeat([]byte{0xff}, 32)...)
	wpkh := func(op byte, c []byte) Input {
		return Input{OutPoint: wire.OutPoint{Hash: chainhash.Hash{op}}, Witness: [][]byte{make([]byte, 71), c},
			PrevScript: append([]byte{op0, 20}, make([]byte, 20)...)}
	}
	tr := func(op byte, x []byte) Input {
		return Input{OutPoint: wire.OutPoint{Hash: chainhash.Hash{op}}, Witness: [][]byte{make([]byte, 64)}, PrevScript: taprootScript(x)}
	}
	outs := []Output{{Value: 1000, Script: taprootScript(other[1:])}}
	cases := []struct {
		name  string
		ins   []Input
		tweak bool
	}{
		{"one key", []Input{wpkh(1, key)}, true},
		{"P + (−P): the point at infinity", []Input{wpkh(1, key), wpkh(2, neg)}, false},
		{"P + P: a doubling", []Input{wpkh(1, key), wpkh(2, key)}, true},
		{"P + (−P) + Q: Q", []Input{wpkh(1, key), wpkh(2, neg), wpkh(3, other)}, true},
		{"x ≥ p only", []Input{tr(1, offCurve[1:])}, false},
		{"x ≥ p beside a key", []Input{tr(1, offCurve[1:]), wpkh(2, key)}, true},
		{"compressed x ≥ p only", []Input{wpkh(1, offCurve)}, false},
		{"x-only P + (−P)", []Input{tr(1, key[1:]), wpkh(2, append([]byte{3}, key[1:]...))}, false},
	}
	for _, c := range cases {
		got, ok := ComputeTweak(c.ins, outs)
		want, wantOK := btcecComputeTweak(c.ins, outs)
		if ok != c.tweak || ok != wantOK || got != want {
			t.Errorf("%s: gnark %x %v, btcec %x %v, want a tweak %v", c.name, got.Point, ok, want.Point, wantOK, c.tweak)
		}
	}
	tweaks := 0
	for range 2000 {
		tx, prev := g.tx()
		ins := make([]Input, len(tx.TxIn))
		for i, in := range tx.TxIn {
			ins[i] = Input{OutPoint: in.PreviousOutPoint, SigScript: in.SignatureScript, Witness: in.Witness, PrevScript: prev[i]}
		}
		o := make([]Output, len(tx.TxOut))
		for i, out := range tx.TxOut {
			o[i] = Output{Value: uint64(out.Value), Script: out.PkScript}
		}
		got, ok := ComputeTweak(ins, o)
		want, wantOK := btcecComputeTweak(ins, o)
		if ok != wantOK || got != want {
			t.Fatalf("tx %s: gnark %x %v, btcec %x %v", tx.TxHash(), got.Point, ok, want.Point, wantOK)
		}
		if ok {
			tweaks++
		}
	}
	if tweaks < 1000 {
		t.Fatalf("only %d of 2,000 transactions had a tweak", tweaks)
	}
}

// TestTweakPointAllocatesNothing: the curve half of a tweak allocates
// nothing (gnark's big.Int entry points would, a dozen times a call).
func TestTweakPointAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("race instrumentation allocates")
	}
	g := newTxGen(360)
	p := randomPoint(t, g)
	var sum secp256k1.G1Jac
	sum.FromAffine(&p.g)
	op := [outPointSize]byte(g.bytes(outPointSize))
	key := g.key().PubKey().SerializeCompressed()
	if a := testing.AllocsPerRun(100, func() {
		var q secp256k1.G1Affine
		_ = gLiftX(key[1:], key[0] == 3, &q)
		_, _ = tweakPoint(&sum, &op)
	}); a != 0 {
		t.Fatalf("%v allocations, want 0", a)
	}
}
