package silentpay

import (
	"fmt"

	"github.com/btcsuite/btcd/btcec/v2"
)

// Candidates returns the x-only output keys a light wallet tests a block's
// taproot filter for, given the tweak of one of the block's transactions:
// P_0 = B_spend + t_0·G, then P_0 + label_m·G for each label the Scanner
// looks for (the change label first, then the labels in the order
// NewScanner was given them, each once). A transaction that pays the
// wallet at all pays it P_0 under one of these keys, since BIP-352's
// sender numbers a scan key's outputs from k = 0; outputs with k > 0 are
// found by Scan once the block is downloaded. So a block whose filter
// matches none of the candidates of any of its tweaks holds no payment to
// the wallet.
//
// A tweak that is not a curve point fails with ErrInvalidTweak, and the
// negligible t_0 that is not a scalar with ErrInvalidScalar. The keys are
// as Scan compares them: BIP-340 x coordinates, y parity dropped.
func (s *Scanner) Candidates(tweak [TweakSize]byte) ([][xOnlySize]byte, error) {
	var t btcec.JacobianPoint
	if !parseCompressed(tweak[:], &t) {
		return nil, fmt.Errorf("tweak %x: %w", tweak, ErrInvalidTweak)
	}
	var ecdh btcec.JacobianPoint
	btcec.ScalarMultNonConst(&s.scan, &t, &ecdh)
	if isInfinity(&ecdh) {
		return nil, fmt.Errorf("tweak %x: %w", tweak, ErrInvalidTweak)
	}
	ecdh.ToAffine()
	secret := serializeCompressed(&ecdh)
	var t0 btcec.ModNScalar
	if !sharedSecretTweak(&secret, 0, &t0) {
		return nil, fmt.Errorf("t_0: %w", ErrInvalidScalar)
	}
	var p0 btcec.JacobianPoint
	btcec.ScalarBaseMultNonConst(&t0, &p0)
	add(&p0, &s.spend)
	out := make([][xOnlySize]byte, 0, 1+len(s.labelPoints))
	appendX := func(p *btcec.JacobianPoint) {
		if isInfinity(p) {
			return // no output key can be the point at infinity
		}
		p.ToAffine()
		var x [xOnlySize]byte
		p.X.PutBytesUnchecked(x[:])
		out = append(out, x)
	}
	base := p0
	appendX(&base)
	for i := range s.labelPoints {
		var pm btcec.JacobianPoint
		btcec.AddNonConst(&p0, &s.labelPoints[i], &pm)
		appendX(&pm)
	}
	return out, nil
}
