package silentpay

import (
	"bytes"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Input is what BIP-352 reads of one transaction input. The slices may
// point into a serialized block; nothing here is retained by the package.
type Input struct {
	// OutPoint is the output the input spends.
	OutPoint wire.OutPoint
	// SigScript and Witness are the input's signature script and witness
	// stack.
	SigScript []byte
	Witness   [][]byte
	// PrevScript is the script of the output it spends.
	PrevScript []byte
}

// Output is what BIP-352 reads of one transaction output.
type Output struct {
	Value  uint64
	Script []byte
}

// InputPublicKey returns the public key BIP-352 takes from in, or false
// when in is not one of BIP-352's inputs for shared secret derivation.
// Senders use it to pick the inputs whose private keys they sum.
func InputPublicKey(in *Input) (*btcec.PublicKey, bool) {
	var p btcec.JacobianPoint
	if !inputKey(in, &p) {
		return nil, false
	}
	return btcec.NewPublicKey(&p.X, &p.Y), true
}

// inputKey sets p (affine) to the public key BIP-352 takes from in and
// reports whether it took one:
//
//   - P2PKH: a 33-byte push of the signature script whose HASH160 is the
//     output's key hash, the last such push first, and only if it is a
//     valid compressed key;
//   - P2SH-P2WPKH: signature script exactly the push of a P2WPKH program,
//     key the last witness item, compressed;
//   - P2WPKH: key the last witness item, compressed;
//   - P2TR: key the output's x-only key with even y, unless the spend is a
//     script path whose control block names NUMS point H as internal key.
//
// Anything else, or anything malformed, counts as no key.
func inputKey(in *Input, p *btcec.JacobianPoint) bool {
	prev := in.PrevScript
	switch {
	case isP2PKH(prev):
		return p2pkhKey(in.SigScript, prev[3:23], p)
	case isP2SH(prev):
		sig := in.SigScript
		if len(sig) != 1+p2wpkhSize || sig[0] != p2wpkhSize || !isP2WPKH(sig[1:]) {
			return false
		}
		return lastWitnessKey(in.Witness, p)
	case isP2WPKH(prev):
		return lastWitnessKey(in.Witness, p)
	case IsTaproot(prev):
		return taprootKey(prev[2:], in.Witness, p)
	}
	return false
}

func lastWitnessKey(w [][]byte, p *btcec.JacobianPoint) bool {
	return len(w) > 0 && parseCompressed(w[len(w)-1], p)
}

// p2pkhKey finds the compressed key of a P2PKH spend among the 33-byte
// pushes of sig, last first. BIP-352 asks for the key anywhere in a
// possibly malleated signature script; in a valid spend the key
// OP_CHECKSIG verified was pushed literally (no enabled opcode builds 33
// bytes), so looking at pushes finds what a byte-by-byte search finds,
// at a cost bounded by the number of pushes rather than the bytes.
func p2pkhKey(sig, keyHash []byte, p *btcec.JacobianPoint) bool {
	var candidates [8][]byte // most scripts have one or two
	found := candidates[:0]
	pushes(sig, func(data []byte) bool {
		if len(data) == compressedSize {
			found = append(found, data)
		}
		return true
	})
	for i := len(found) - 1; i >= 0; i-- {
		if bytes.Equal(address.Hash160(found[i]), keyHash) {
			return parseCompressed(found[i], p)
		}
	}
	return false
}

// taprootKey takes the x-only output key of a taproot spend unless its
// witness is a script path (two or more items once an annex is dropped)
// whose control block carries NUMS point H as internal key. An empty
// witness is no spend at all and counts as no key.
func taprootKey(xOnly []byte, w [][]byte, p *btcec.JacobianPoint) bool {
	if len(w) == 0 {
		return false
	}
	if last := w[len(w)-1]; len(w) > 1 && len(last) > 0 && last[0] == annexTag {
		w = w[:len(w)-1]
	}
	if len(w) > 1 {
		if cb := w[len(w)-1]; len(cb) >= 1+xOnlySize && string(cb[1:1+xOnlySize]) == numsH {
			return false
		}
	}
	return liftX(xOnly, false, p)
}
