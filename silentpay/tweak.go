package silentpay

import (
	"bytes"
	"encoding/binary"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/consensys/gnark-crypto/ecc/secp256k1"
)

// TweakSize is the size of a served tweak: a SEC1 compressed point.
const TweakSize = compressedSize

// Tweak is what a tweak index keeps for one transaction.
type Tweak struct {
	// Point is input_hash·A, compressed: what a wallet multiplies by its
	// scan key to get the shared secret.
	Point [TweakSize]byte
	// MaxTaprootValue is the largest value (satoshis) among the
	// transaction's taproot outputs, which dust levels compare against.
	MaxTaprootValue uint64
}

// ComputeTweak returns the BIP-352 tweak of a transaction given its inputs
// (each with the script it spends) and outputs, or false when BIP-352
// does not scan the transaction: no taproot output, no input of BIP-352's
// list, an input spending a witness program of version 2 or more, input
// keys summing to the point at infinity, or an input hash that is not a
// valid scalar. It does not know coinbases: callers leave them out
// (ComputeTweakMsg and BlockBuilder do). Malformed scripts and witnesses count
// as ineligible inputs; ComputeTweak never panics.
func ComputeTweak(ins []Input, outs []Output) (Tweak, bool) {
	var st txSum
	if !st.read(ins, outs) {
		return Tweak{}, false
	}
	point, ok := tweakPoint(&st.a, &st.outpointL)
	if !ok {
		return Tweak{}, false
	}
	return Tweak{Point: point, MaxTaprootValue: st.maxTaproot}, true
}

// txSum is what ComputeTweak reads of a transaction before the curve work
// that needs A in affine form: the Jacobian sum A of its eligible input
// keys, outpoint_L and its largest taproot output value. BlockBuilder
// collects these for a run of transactions and finishes them together
// (tweakBatch).
type txSum struct {
	a          secp256k1.G1Jac // Z = 0 when the keys cancel
	outpointL  [outPointSize]byte
	maxTaproot uint64
}

// read sets s from a transaction's inputs and outputs and reports whether
// the transaction may have a tweak: a taproot output, no input spending a
// witness program of version 2 or more, and at least one eligible input
// key. s.a may still be the point at infinity, which has no tweak.
func (s *txSum) read(ins []Input, outs []Output) bool {
	s.maxTaproot = 0
	taproot := false
	for i := range outs {
		if IsTaproot(outs[i].Script) {
			taproot = true
			s.maxTaproot = max(s.maxTaproot, outs[i].Value)
		}
	}
	if !taproot || len(ins) == 0 {
		return false
	}
	s.a = secp256k1.G1Jac{} // zero value: Z = 0, the point at infinity
	var p secp256k1.G1Affine
	found := false
	for i := range ins {
		if spendsFutureWitness(ins[i].PrevScript) {
			return false
		}
		if k, ok := inputKeyRef(&ins[i]); ok && gLiftX(k.x, k.odd, &p) {
			s.a.AddMixed(&p)
			found = true
		}
	}
	if !found {
		return false
	}
	s.outpointL = smallestOutPoint(ins)
	return true
}

// inputHash sets s to hash_BIP0352/Inputs(outpoint_L || ser_P(A)) and
// reports whether it is a valid scalar. a must be affine and finite.
func inputHash(outpointL [outPointSize]byte, a *btcec.JacobianPoint, s *btcec.ModNScalar) bool {
	var msg [outPointSize + compressedSize]byte
	copy(msg[:], outpointL[:])
	ser := serializeCompressed(a)
	copy(msg[outPointSize:], ser[:])
	h := taggedHash(tagInputs, msg[:])
	return scalarFromHash(&h, s)
}

// serializeOutPoint is an outpoint as a transaction serializes it: txid
// (internal byte order) then the index, little endian.
func serializeOutPoint(op *wire.OutPoint) [outPointSize]byte {
	var b [outPointSize]byte
	copy(b[:], op.Hash[:])
	binary.LittleEndian.PutUint32(b[32:], op.Index)
	return b
}

// smallestOutPoint is outpoint_L: the lexicographically smallest
// serialized outpoint among all of the inputs, eligible or not.
func smallestOutPoint(ins []Input) [outPointSize]byte {
	least := serializeOutPoint(&ins[0].OutPoint)
	for i := 1; i < len(ins); i++ {
		if b := serializeOutPoint(&ins[i].OutPoint); bytes.Compare(b[:], least[:]) < 0 {
			least = b
		}
	}
	return least
}

// ComputeTweakMsg is ComputeTweak for a decoded transaction: prevScripts[i] is the
// script tx.TxIn[i] spends. A coinbase yields no tweak. It fails only with
// ErrPrevScriptCount.
func ComputeTweakMsg(tx *wire.MsgTx, prevScripts [][]byte) (Tweak, bool, error) {
	if isCoinbase(tx) {
		return Tweak{}, false, nil
	}
	if len(prevScripts) != len(tx.TxIn) {
		return Tweak{}, false, ErrPrevScriptCount
	}
	ins := make([]Input, len(tx.TxIn))
	for i, in := range tx.TxIn {
		ins[i] = Input{OutPoint: in.PreviousOutPoint, SigScript: in.SignatureScript, Witness: in.Witness, PrevScript: prevScripts[i]}
	}
	outs := make([]Output, len(tx.TxOut))
	for i, out := range tx.TxOut {
		outs[i] = Output{Value: uint64(out.Value), Script: out.PkScript}
	}
	tw, ok := ComputeTweak(ins, outs)
	return tw, ok, nil
}

// isCoinbase reports a transaction whose only input spends the null
// outpoint.
func isCoinbase(tx *wire.MsgTx) bool {
	if len(tx.TxIn) != 1 {
		return false
	}
	op := tx.TxIn[0].PreviousOutPoint
	return op.Index == wire.MaxPrevOutIndex && op.Hash == [32]byte{}
}
