package silentpay

import (
	"slices"

	"github.com/cfindexd/cfindexd/gcs"
	"github.com/consensys/gnark-crypto/ecc/secp256k1"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fp"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fr"
)

// tweakBatchSize is how many transactions' tweaks a BlockBuilder finishes
// together. Each finish costs three field inversions whatever its size,
// so past a few dozen transactions they are noise; the bound keeps the
// scratch (about 2 KB a transaction, mostly the odd-multiple tables)
// small and in cache.
const tweakBatchSize = 64

// pendingTweak is a transaction of a block whose sum A is finite, waiting
// in a tweakBatch for its curve work.
type pendingTweak struct {
	index      uint32
	valid      bool // its input hash is a valid scalar
	maxTaproot uint64
	outpointL  [outPointSize]byte
	keysEnd    int        // end of its taproot output keys in tweakBatch.keys
	k          [4]uint64  // input_hash in plain limbs
	kMont      fr.Element // and in Montgomery form
}

// tweakBatch finishes the tweaks of a run of a block's transactions with
// Montgomery's trick: one field inversion brings every sum A to affine
// form (to serialize it for its input hash), one every A's table of odd
// multiples (so that input_hash·A adds them mixed, scalarMultTable), and
// one every input_hash·A (to compress it), instead of three inversions
// per transaction as tweakPoint does. Its slices are a BlockBuilder's
// scratch, kept from one block to the next; keys points into the block
// being read and is cleared by release.
type tweakBatch struct {
	txs  []pendingTweak
	jac  []secp256k1.G1Jac // the sums A, then the products input_hash·A
	aff  []secp256k1.G1Affine
	pre  []fp.Element // prefix products of Montgomery's trick
	keys [][]byte     // x-only keys of the pending transactions' taproot outputs
	// The odd multiples of every A (glvTableSize each), Jacobian then
	// affine, with their prefix products: a third inversion.
	tabJ   []secp256k1.G1Jac
	tabA   []secp256k1.G1Affine
	tabPre []fp.Element
}

// add queues a transaction read into s (txSum.read reported true) with
// its outputs. A sum at the point at infinity has no tweak and is dropped
// here, so no Z = 0 enters the first inversion's product.
func (t *tweakBatch) add(index uint32, s *txSum, outs []Output) {
	if s.a.Z.IsZero() {
		return
	}
	for i := range outs {
		if IsTaproot(outs[i].Script) {
			t.keys = append(t.keys, outs[i].Script[2:])
		}
	}
	t.txs = append(t.txs, pendingTweak{index: index, maxTaproot: s.maxTaproot, outpointL: s.outpointL, keysEnd: len(t.keys)})
	t.jac = append(t.jac, s.a)
}

// finish computes the tweaks of the queued transactions, appends each
// that has one to blk.Tweaks in block order and its taproot output keys
// to filter, and empties the batch. The tweaks are tweakPoint's bytes.
func (t *tweakBatch) finish(blk *Block, filter *gcs.BasicBuilder) {
	n := len(t.txs)
	if n == 0 {
		return
	}
	t.aff = slices.Grow(t.aff[:0], n)[:n]
	t.pre = slices.Grow(t.pre[:0], n)[:n]
	batchToAffine(t.aff, t.jac, t.pre)
	m := n * glvTableSize
	t.tabJ = slices.Grow(t.tabJ[:0], m)[:m]
	t.tabA = slices.Grow(t.tabA[:0], m)[:m]
	t.tabPre = slices.Grow(t.tabPre[:0], m)[:m]
	for i := range t.txs {
		p := &t.txs[i]
		tab := (*[glvTableSize]secp256k1.G1Jac)(t.tabJ[i*glvTableSize:])
		if p.valid = gInputHash(&t.aff[i], &p.outpointL, &p.k, &p.kMont); !p.valid {
			*tab = [glvTableSize]secp256k1.G1Jac{} // stays out of the product
			continue
		}
		oddMultiples(tab, &t.aff[i])
	}
	batchToAffine(t.tabA, t.tabJ, t.tabPre)
	for i := range t.txs {
		p := &t.txs[i]
		if !p.valid {
			t.jac[i] = secp256k1.G1Jac{} // stays out of the second product
			continue
		}
		scalarMultTable(&t.jac[i], (*[glvTableSize]secp256k1.G1Affine)(t.tabA[i*glvTableSize:]), &p.k, &p.kMont)
	}
	// A product at the point at infinity (impossible: k in [1, n), A
	// finite, prime order) would become (0, 0), as gToAffine makes it.
	batchToAffine(t.aff, t.jac, t.pre)
	start := 0
	for i := range t.txs {
		p := &t.txs[i]
		if p.valid {
			blk.Tweaks = append(blk.Tweaks, TxTweak{TxIndex: p.index, Tweak: Tweak{Point: gSerializeCompressed(&t.aff[i]), MaxTaprootValue: p.maxTaproot}})
			for _, key := range t.keys[start:p.keysEnd] {
				filter.Add(key)
			}
		}
		start = p.keysEnd
	}
	t.reset()
}

// reset empties the batch and drops its references into the block over
// the keys' whole capacity; the buffers are kept.
func (t *tweakBatch) reset() {
	clear(t.keys[:cap(t.keys)])
	t.txs, t.jac, t.aff, t.pre, t.keys = t.txs[:0], t.jac[:0], t.aff[:0], t.pre[:0], t.keys[:0]
	t.tabJ, t.tabA, t.tabPre = t.tabJ[:0], t.tabA[:0], t.tabPre[:0]
}

// batchToAffine sets dst[i] to src[i] in affine coordinates with a single
// field inversion (Montgomery's trick), pre being scratch of len(src);
// the point at infinity (Z = 0) becomes (0, 0), as btcec's ToAffine
// leaves it, and is left out of the product so that it cannot zero the
// others.
// gnark's BatchJacobianToAffineG1 does the same but allocates and inverts
// through big.Int.
func batchToAffine(dst []secp256k1.G1Affine, src []secp256k1.G1Jac, pre []fp.Element) {
	var acc fp.Element
	acc.SetOne()
	for i := range src {
		pre[i] = acc
		if !src[i].Z.IsZero() {
			acc.Mul(&acc, &src[i].Z)
		}
	}
	var inv fp.Element
	fpInverse(&inv, &acc) // 1/(Z_0·…·Z_{n−1})
	for i := len(src) - 1; i >= 0; i-- {
		if src[i].Z.IsZero() {
			dst[i] = secp256k1.G1Affine{}
			continue
		}
		var zi, zi2 fp.Element
		zi.Mul(&pre[i], &inv) // 1/Z_i
		inv.Mul(&inv, &src[i].Z)
		zi2.Square(&zi)
		dst[i].X.Mul(&src[i].X, &zi2)
		dst[i].Y.Mul(&src[i].Y, &zi2).Mul(&dst[i].Y, &zi)
	}
}
