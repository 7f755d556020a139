package silentpay

import (
	"fmt"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// SenderKey is the private key of one input from BIP-352's list.
type SenderKey struct {
	Key *btcec.PrivateKey
	// Taproot marks a key spending a taproot output, which BIP-352 negates
	// when its public key has an odd y.
	Taproot bool
}

// Recipient is a silent payment address: the scan key and the spend key
// (labeled or not), B_scan and B_m.
type Recipient struct {
	Scan, Spend *btcec.PublicKey
}

// OutputKeys returns the x-only taproot output key paying each recipient
// of a transaction whose eligible inputs have keys and which spends
// outpoints (all its inputs, eligible or not). Recipients sharing a scan
// key get k = 0, 1, … in the order given. It fails with ErrNoInputKeys when
// the keys are none or sum to zero, ErrTooManyRecipients when a scan key
// has more than KMax recipients, and ErrInvalidScalar where BIP-352 fails
// on a hash.
func OutputKeys(keys []SenderKey, outpoints []wire.OutPoint, recipients []Recipient) ([][xOnlySize]byte, error) {
	if len(keys) == 0 || len(outpoints) == 0 {
		return nil, ErrNoInputKeys
	}
	var a btcec.ModNScalar
	for _, k := range keys {
		ai := k.Key.Key
		if k.Taproot && k.Key.PubKey().SerializeCompressed()[0] == 0x03 {
			ai.Negate()
		}
		a.Add(&ai)
	}
	if a.IsZero() {
		return nil, ErrNoInputKeys
	}
	var bigA btcec.JacobianPoint
	btcec.ScalarBaseMultNonConst(&a, &bigA)
	bigA.ToAffine()
	ins := make([]Input, len(outpoints))
	for i, op := range outpoints {
		ins[i].OutPoint = op
	}
	var h btcec.ModNScalar
	if !inputHash(smallestOutPoint(ins), &bigA, &h) {
		return nil, fmt.Errorf("input hash: %w", ErrInvalidScalar)
	}
	h.Mul(&a) // input_hash·a

	type group struct {
		secret [compressedSize]byte
		k      uint32
	}
	groups := map[[compressedSize]byte]*group{}
	out := make([][xOnlySize]byte, len(recipients))
	for i, r := range recipients {
		scanKey := [compressedSize]byte(r.Scan.SerializeCompressed())
		g := groups[scanKey]
		if g == nil {
			var bScan, ecdh btcec.JacobianPoint
			r.Scan.AsJacobian(&bScan)
			btcec.ScalarMultNonConst(&h, &bScan, &ecdh)
			ecdh.ToAffine()
			g = &group{secret: serializeCompressed(&ecdh)}
			groups[scanKey] = g
		}
		if g.k >= KMax {
			return nil, fmt.Errorf("scan key %x: %w", scanKey, ErrTooManyRecipients)
		}
		k := g.k
		g.k++
		var tk btcec.ModNScalar
		if !sharedSecretTweak(&g.secret, k, &tk) {
			return nil, fmt.Errorf("t_%d: %w", k, ErrInvalidScalar)
		}
		var p, bm btcec.JacobianPoint
		btcec.ScalarBaseMultNonConst(&tk, &p)
		r.Spend.AsJacobian(&bm)
		add(&p, &bm)
		p.ToAffine()
		p.X.PutBytesUnchecked(out[i][:])
	}
	return out, nil
}
