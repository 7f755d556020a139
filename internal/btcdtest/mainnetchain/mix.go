package mainnetchain

import (
	"crypto/sha256"
	"math"
	"math/rand/v2"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/txscript/v2"
)

// The shape of the mainnet-shaped chain. The figures are estimates of
// mainnet in 2024–2025 as public on-chain dashboards chart it (no source
// could be retrieved offline to cite exact numbers); what the chain really
// contains is measured and reported by Generate (Stats).

// mixKind is an output script template of the mainnet-shaped chain.
type mixKind uint8

// Output kinds, with the spend each needs.
const (
	mixP2WPKH     mixKind = iota // witness [sig, pubkey]
	mixP2TR                      // key path: witness [schnorr sig]
	mixP2SHP2WPKH                // scriptSig [redeem], witness [sig, pubkey]
	mixP2PKH                     // scriptSig [sig, pubkey]
	mixP2WSHMulti                // 2-of-3 multisig: witness [<>, sig, sig, script]
	mixP2PK                      // scriptSig [sig]
	mixOpReturn                  // unspendable
	numMixKinds
)

var mixKindNames = [numMixKinds]string{"p2wpkh", "p2tr", "p2sh-p2wpkh", "p2pkh", "p2wsh-2of3", "p2pk", "op_return"}

// String names the kind.
func (k mixKind) String() string {
	if k >= numMixKinds {
		return "unknown"
	}
	return mixKindNames[k]
}

// keysOf is how many consecutive keys an output of kind k uses.
func (k mixKind) keys() int {
	switch k {
	case mixP2WSHMulti:
		return 3
	case mixOpReturn:
		return 0
	}
	return 1
}

// paymentWeights are the relative odds of each kind for a payment output
// (change goes back to the kind of the transaction's first input, so the
// mix of all outputs drifts towards the mix of what is spent; the weights
// are tuned so that the chain's outputs land near: P2WPKH ~45 %, P2TR
// ~27 %, P2SH ~9 %, P2PKH ~9 %, OP_RETURN ~5 %, P2WSH ~4 %, P2PK a few
// hundredths of a percent).
var paymentWeights = [numMixKinds]float64{
	mixP2WPKH:     46,
	mixP2TR:       26,
	mixP2SHP2WPKH: 9,
	mixP2PKH:      9,
	mixP2WSHMulti: 4,
	mixP2PK:       0.05,
}

// opReturnTxShare is the share of transactions with one OP_RETURN output
// (runes, commitments, anchors): about 5 % of all outputs.
const opReturnTxShare = 0.13

// Inputs per transaction: mostly one or two, some consolidations.
// mean ≈ 1.9 (a few more are added where the chosen ones are worth too
// little).
func sampleInputs(r *rand.Rand) int {
	switch u := r.Float64(); {
	case u < 0.65:
		return 1
	case u < 0.85:
		return 2
	case u < 0.91:
		return 3
	case u < 0.992:
		return 4 + r.IntN(5) // 4..8
	default:
		return 15 + r.IntN(36) // consolidations: 15..50
	}
}

// Outputs per transaction besides an OP_RETURN: sweeps, payment with
// change, a few recipients, and batched payouts. mean ≈ 2.6.
func sampleOutputs(r *rand.Rand) int {
	switch u := r.Float64(); {
	case u < 0.20:
		return 1
	case u < 0.84:
		return 2
	case u < 0.97:
		return 3 + r.IntN(3) // 3..5
	default:
		return 10 + r.IntN(31) // batch payouts: 10..40
	}
}

// Spend ages: how old an output is when it is spent, as shares of inputs.
// The script cache (64 MiB by default) holds very roughly the last two
// hundred blocks of such a chain, so the old share is about what reaches
// the node.
const (
	ageSameBlock = 0.05 // an output of an earlier transaction of the block
	ageRecent    = 0.38 // 1–6 blocks
	ageDay       = 0.32 // 7–144 blocks
	// the rest (0.25): older than 144 blocks or from the pre-history
	// (seedHistory), uniformly over the heights
	recentBlocks = 6
	dayBlocks    = 144
)

// spendAge classes, for Stats.
const (
	ageClassSame = iota
	ageClassRecent
	ageClassDay
	ageClassOld
	numAgeClasses
)

var ageClassNames = [numAgeClasses]string{"same block", "1-6 blocks", "7-144 blocks", "older or pre-history"}

// sampleAgeClass picks the age class of one input.
func sampleAgeClass(r *rand.Rand) int {
	switch u := r.Float64(); {
	case u < ageSameBlock:
		return ageClassSame
	case u < ageSameBlock+ageRecent:
		return ageClassRecent
	case u < ageSameBlock+ageRecent+ageDay:
		return ageClassDay
	default:
		return ageClassOld
	}
}

// sampleKind picks a payment output's kind by paymentWeights.
func sampleKind(r *rand.Rand) mixKind {
	var total float64
	for _, w := range paymentWeights {
		total += w
	}
	u := r.Float64() * total
	for k, w := range paymentWeights {
		if u < w {
			return mixKind(k)
		}
		u -= w
	}
	return mixP2WPKH
}

// logUniform draws a value between lo and hi, evenly on a log scale.
func logUniform(r *rand.Rand, lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	return int64(math.Exp(math.Log(float64(lo)) + r.Float64()*(math.Log(float64(hi))-math.Log(float64(lo)))))
}

// Virtual sizes for fee estimates (vbytes, rounded up).
var (
	inputVSize  = [numMixKinds]int64{mixP2WPKH: 68, mixP2TR: 58, mixP2SHP2WPKH: 91, mixP2PKH: 148, mixP2WSHMulti: 105, mixP2PK: 114}
	outputVSize = [numMixKinds]int64{mixP2WPKH: 31, mixP2TR: 43, mixP2SHP2WPKH: 32, mixP2PKH: 34, mixP2WSHMulti: 43, mixP2PK: 44, mixOpReturn: 50}
)

// mixScript builds the output script of kind k for the keys starting at
// key (k.keys() of them).
func mixScript(keys *keySeq, k mixKind, key uint32) []byte {
	switch k {
	case mixP2WPKH:
		return append([]byte{txscript.OP_0, txscript.OP_DATA_20}, address.Hash160(keys.pub(key))...)
	case mixP2TR:
		return append([]byte{txscript.OP_1, txscript.OP_DATA_32}, keys.pub(key)[1:]...)
	case mixP2SHP2WPKH:
		return p2shOf(mixScript(keys, mixP2WPKH, key))
	case mixP2PKH:
		s := []byte{txscript.OP_DUP, txscript.OP_HASH160, txscript.OP_DATA_20}
		s = append(s, address.Hash160(keys.pub(key))...)
		return append(s, txscript.OP_EQUALVERIFY, txscript.OP_CHECKSIG)
	case mixP2WSHMulti:
		sum := sha256.Sum256(multisigScript(keys, key))
		return append([]byte{txscript.OP_0, txscript.OP_DATA_32}, sum[:]...)
	case mixP2PK:
		s := append([]byte{txscript.OP_DATA_33}, keys.pub(key)...)
		return append(s, txscript.OP_CHECKSIG)
	}
	panic("btcdtest: mixScript of an unspendable kind")
}

// multisigScript is OP_2 <key> <key+1> <key+2> OP_3 OP_CHECKMULTISIG.
func multisigScript(keys *keySeq, key uint32) []byte {
	s := []byte{txscript.OP_2}
	for i := range uint32(3) {
		s = append(s, txscript.OP_DATA_33)
		s = append(s, keys.pub(key+i)...)
	}
	return append(s, txscript.OP_3, txscript.OP_CHECKMULTISIG)
}

// p2shOf is OP_HASH160 <HASH160(redeem)> OP_EQUAL.
func p2shOf(redeem []byte) []byte {
	s := []byte{txscript.OP_HASH160, txscript.OP_DATA_20}
	s = append(s, address.Hash160(redeem)...)
	return append(s, txscript.OP_EQUAL)
}

// opReturnScript is OP_RETURN with a payload of n bytes from r (n ≤ 75).
func opReturnScript(r *rand.Rand, n int) []byte {
	s := make([]byte, 2+n)
	s[0], s[1] = txscript.OP_RETURN, byte(n)
	for i := 2; i < len(s); i++ {
		s[i] = byte(r.Uint32())
	}
	return s
}
