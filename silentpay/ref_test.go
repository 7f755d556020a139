package silentpay

import (
	"bytes"
	"sort"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// refTweak is a straightforward, independent reading of BIP-352's receiver
// for one decoded transaction, written the way the BIP's prose and its
// reference implementation put it: keys parsed with btcec.ParsePubKey, the
// P2PKH key found by sliding a 33-byte window over the whole signature
// script, outpoints sorted, chainhash.TaggedHash. It is the differential
// oracle of the tests and the peer of the benchmarks.
func refTweak(tx *wire.MsgTx, prev [][]byte) ([33]byte, uint64, bool) {
	var maxV uint64
	taproot := false
	for _, o := range tx.TxOut {
		if len(o.PkScript) == 34 && o.PkScript[0] == 0x51 && o.PkScript[1] == 0x20 {
			taproot = true
			maxV = max(maxV, uint64(o.Value))
		}
	}
	if !taproot {
		return [33]byte{}, 0, false
	}
	var keys []*btcec.PublicKey
	for i, in := range tx.TxIn {
		s := prev[i]
		if len(s) >= 4 && len(s) <= 42 && s[0] >= 0x52 && s[0] <= 0x60 && int(s[1]) == len(s)-2 {
			return [33]byte{}, 0, false
		}
		if k := refInputKey(in, s); k != nil {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return [33]byte{}, 0, false
	}
	var sum btcec.JacobianPoint
	for _, k := range keys {
		var p, r btcec.JacobianPoint
		k.AsJacobian(&p)
		btcec.AddNonConst(&sum, &p, &r)
		sum = r
	}
	if (sum.X.IsZero() && sum.Y.IsZero()) || sum.Z.IsZero() {
		return [33]byte{}, 0, false
	}
	sum.ToAffine()
	a := btcec.NewPublicKey(&sum.X, &sum.Y)
	var ops [][]byte
	for _, in := range tx.TxIn {
		var b bytes.Buffer
		b.Write(in.PreviousOutPoint.Hash[:])
		b.Write([]byte{byte(in.PreviousOutPoint.Index), byte(in.PreviousOutPoint.Index >> 8), byte(in.PreviousOutPoint.Index >> 16), byte(in.PreviousOutPoint.Index >> 24)})
		ops = append(ops, b.Bytes())
	}
	sort.Slice(ops, func(i, j int) bool { return bytes.Compare(ops[i], ops[j]) < 0 })
	h := chainhash.TaggedHash([]byte("BIP0352/Inputs"), ops[0], a.SerializeCompressed())
	var s btcec.ModNScalar
	if s.SetByteSlice(h[:]) || s.IsZero() {
		return [33]byte{}, 0, false
	}
	var t btcec.JacobianPoint
	btcec.ScalarMultNonConst(&s, &sum, &t)
	t.ToAffine()
	return [33]byte(btcec.NewPublicKey(&t.X, &t.Y).SerializeCompressed()), maxV, true
}

func refCompressed(b []byte) *btcec.PublicKey {
	if len(b) != 33 || (b[0] != 2 && b[0] != 3) {
		return nil
	}
	k, err := btcec.ParsePubKey(b)
	if err != nil {
		return nil
	}
	return k
}

func refInputKey(in *wire.TxIn, s []byte) *btcec.PublicKey {
	w := in.Witness
	switch {
	case len(s) == 25 && s[0] == 0x76 && s[1] == 0xa9 && s[2] == 20 && s[23] == 0x88 && s[24] == 0xac:
		sig := in.SignatureScript
		for i := len(sig); i >= 33; i-- {
			if bytes.Equal(address.Hash160(sig[i-33:i]), s[3:23]) {
				if k := refCompressed(sig[i-33 : i]); k != nil {
					return k
				}
			}
		}
	case len(s) == 23 && s[0] == 0xa9 && s[1] == 20 && s[22] == 0x87:
		sig := in.SignatureScript
		if len(sig) == 23 && sig[0] == 22 && sig[1] == 0 && sig[2] == 20 && len(w) > 0 {
			return refCompressed(w[len(w)-1])
		}
	case len(s) == 22 && s[0] == 0 && s[1] == 20:
		if len(w) > 0 {
			return refCompressed(w[len(w)-1])
		}
	case len(s) == 34 && s[0] == 0x51 && s[1] == 0x20:
		if len(w) == 0 {
			return nil
		}
		if len(w) > 1 && len(w[len(w)-1]) > 0 && w[len(w)-1][0] == 0x50 {
			w = w[:len(w)-1]
		}
		if len(w) > 1 {
			cb := w[len(w)-1]
			if len(cb) >= 33 && bytes.Equal(cb[1:33], []byte(numsH)) {
				return nil
			}
		}
		return refCompressed(append([]byte{2}, s[2:]...))
	}
	return nil
}
