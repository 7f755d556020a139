package silentpay

import (
	"bytes"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/consensys/gnark-crypto/ecc/secp256k1"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fp"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fr"
)

// BenchmarkBlockTweaks measures the tweak work of one generated block of
// 500 transactions (every input kind, fixed seed): BlockBuilder.Build on
// the serialized block, against the straightforward peer in the same run
// (wire decoding and refTweak per transaction). It reports transactions
// per second per core for each and ours/peer, the speed ratio.
func BenchmarkBlockTweaks(b *testing.B) {
	g := newTxGen(10)
	msg, prev := g.block(500, chainhash.Hash{})
	raw := serializeBlock(b, msg)
	ntx := float64(len(msg.Transactions) - 1)
	var bb BlockBuilder
	var ours, peer time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := bb.Build(raw, prev); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		var m wire.MsgBlock
		if err := m.Deserialize(bytes.NewReader(raw)); err != nil {
			b.Fatal(err)
		}
		rest := prev
		for _, tx := range m.Transactions[1:] {
			refTweak(tx, rest[:len(tx.TxIn)])
			rest = rest[len(tx.TxIn):]
		}
		ours += mid.Sub(start)
		peer += time.Since(mid)
	}
	n := float64(b.N)
	oursRate := ntx * n / ours.Seconds()
	peerRate := ntx * n / peer.Seconds()
	b.ReportMetric(oursRate, "tx/s")
	b.ReportMetric(peerRate, "peer-tx/s")
	b.ReportMetric(oursRate/peerRate, "ours/peer")
}

// BenchmarkScan measures a wallet scanning one transaction's tweak with
// two taproot outputs and the change label, as cfscan will per tweak.
func BenchmarkScan(b *testing.B) {
	g := newTxGen(11)
	sc, err := NewScanner(g.key(), g.key().PubKey(), []uint32{1, 2, 3})
	if err != nil {
		b.Fatal(err)
	}
	tweak := [33]byte(g.key().PubKey().SerializeCompressed())
	outs := [][32]byte{[32]byte(g.bytes(32)), [32]byte(g.bytes(32))}
	for b.Loop() {
		if _, err := sc.Scan(tweak, outs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCurveSteps measures each curve step of a tweak in both
// libraries, the index's gnark-crypto path against btcec's: lifting an
// input key, adding it to a Jacobian sum, the inversion to affine and the
// scalar multiplication.
func BenchmarkCurveSteps(b *testing.B) {
	g := newTxGen(12)
	c := g.key().PubKey().SerializeCompressed()
	var pb, sumB btcec.JacobianPoint
	var pg secp256k1.G1Affine
	var sumG secp256k1.G1Jac
	liftX(c[1:], c[0] == 3, &pb)
	gLiftX(c[1:], c[0] == 3, &pg)
	for range 3 {
		p := g.key().PubKey().SerializeCompressed()
		var qb btcec.JacobianPoint
		var qg secp256k1.G1Affine
		liftX(p[1:], p[0] == 3, &qb)
		gLiftX(p[1:], p[0] == 3, &qg)
		add(&sumB, &qb)
		sumG.AddMixed(&qg)
	}
	h := [32]byte(g.bytes(32))
	var s btcec.ModNScalar
	var limbs [4]uint64
	var kMont fr.Element
	if !scalarFromHash(&h, &s) || !gScalarFromHash(&h, &limbs, &kMont) {
		b.Fatal("not a scalar")
	}
	b.Run("lift/btcec", func(b *testing.B) {
		for b.Loop() {
			liftX(c[1:], c[0] == 3, &pb)
		}
	})
	b.Run("lift/gnark", func(b *testing.B) {
		for b.Loop() {
			gLiftX(c[1:], c[0] == 3, &pg)
		}
	})
	b.Run("add/btcec", func(b *testing.B) {
		for b.Loop() {
			r := sumB
			add(&r, &pb)
		}
	})
	b.Run("add/gnark", func(b *testing.B) {
		for b.Loop() {
			r := sumG
			r.AddMixed(&pg)
		}
	})
	b.Run("affine/btcec", func(b *testing.B) {
		for b.Loop() {
			r := sumB
			r.ToAffine()
		}
	})
	b.Run("affine/gnark", func(b *testing.B) {
		for b.Loop() {
			var a secp256k1.G1Affine
			gToAffine(&a, &sumG)
		}
	})
	b.Run("mult/btcec", func(b *testing.B) {
		for b.Loop() {
			var r btcec.JacobianPoint
			btcec.ScalarMultNonConst(&s, &pb, &r)
		}
	})
	b.Run("mult/gnark", func(b *testing.B) {
		for b.Loop() {
			var r secp256k1.G1Jac
			scalarMult(&r, &pg, &limbs, &kMont)
		}
	})
	// As tweakBatch multiplies: tweakBatchSize points' odd multiples
	// brought to affine with one inversion, then mixed additions; the
	// metric is per point, the inversion's share included.
	b.Run("mult/gnark-batched", func(b *testing.B) {
		tj := make([]secp256k1.G1Jac, tweakBatchSize*glvTableSize)
		ta := make([]secp256k1.G1Affine, len(tj))
		pre := make([]fp.Element, len(tj))
		for b.Loop() {
			for i := range tweakBatchSize {
				oddMultiples((*[glvTableSize]secp256k1.G1Jac)(tj[i*glvTableSize:]), &pg)
			}
			batchToAffine(ta, tj, pre)
			for i := range tweakBatchSize {
				var r secp256k1.G1Jac
				scalarMultTable(&r, (*[glvTableSize]secp256k1.G1Affine)(ta[i*glvTableSize:]), &limbs, &kMont)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tweakBatchSize), "ns/point")
	})
}
