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

// keyRef is where an input's public key lies in its scripts, not yet
// lifted to the curve: the x coordinate (32 bytes) and y's parity. The
// index lifts it with gnark-crypto (gLiftX), the sender's side with btcec
// (liftX); both reject the same bytes.
type keyRef struct {
	x   []byte
	odd bool
}

// inputKey sets p (affine) to the public key BIP-352 takes from in and
// reports whether it took one, with btcec.
func inputKey(in *Input, p *btcec.JacobianPoint) bool {
	k, ok := inputKeyRef(in)
	return ok && liftX(k.x, k.odd, p)
}

// inputKeyRef finds the public key BIP-352 takes from in; the caller
// lifts it, and a key off the curve counts as no key. The key is
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
func inputKeyRef(in *Input) (keyRef, bool) {
	prev := in.PrevScript
	switch {
	case isP2PKH(prev):
		return p2pkhKey(in.SigScript, prev[3:23])
	case isP2SH(prev):
		sig := in.SigScript
		if len(sig) != 1+p2wpkhSize || sig[0] != p2wpkhSize || !isP2WPKH(sig[1:]) {
			return keyRef{}, false
		}
		return lastWitnessKey(in.Witness)
	case isP2WPKH(prev):
		return lastWitnessKey(in.Witness)
	case IsTaproot(prev):
		return taprootKey(prev[2:], in.Witness)
	}
	return keyRef{}, false
}

// compressedKey reads b as a SEC1 compressed key's bytes, without
// checking its x is on the curve.
func compressedKey(b []byte) (keyRef, bool) {
	if len(b) != compressedSize || (b[0] != 0x02 && b[0] != 0x03) {
		return keyRef{}, false
	}
	return keyRef{x: b[1:], odd: b[0] == 0x03}, true
}

func lastWitnessKey(w [][]byte) (keyRef, bool) {
	if len(w) == 0 {
		return keyRef{}, false
	}
	return compressedKey(w[len(w)-1])
}

// p2pkhKey finds the compressed key of a P2PKH spend among the 33-byte
// pushes of sig, last first. BIP-352 asks for the key anywhere in a
// possibly malleated signature script; in a valid spend the key
// OP_CHECKSIG verified was pushed literally (no enabled opcode builds 33
// bytes), so looking at pushes finds what a byte-by-byte search finds,
// at a cost bounded by the number of pushes rather than the bytes.
func p2pkhKey(sig, keyHash []byte) (keyRef, bool) {
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
			return compressedKey(found[i])
		}
	}
	return keyRef{}, false
}

// taprootKey takes the x-only output key of a taproot spend unless its
// witness is a script path (two or more items once an annex is dropped)
// whose control block carries NUMS point H as internal key. An empty
// witness is no spend at all and counts as no key.
func taprootKey(xOnly []byte, w [][]byte) (keyRef, bool) {
	if len(w) == 0 {
		return keyRef{}, false
	}
	if last := w[len(w)-1]; len(w) > 1 && len(last) > 0 && last[0] == annexTag {
		w = w[:len(w)-1]
	}
	if len(w) > 1 {
		if cb := w[len(w)-1]; len(cb) >= 1+xOnlySize && string(cb[1:1+xOnlySize]) == numsH {
			return keyRef{}, false
		}
	}
	return keyRef{x: xOnly}, true
}
