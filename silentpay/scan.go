package silentpay

import (
	"encoding/binary"
	"fmt"

	"github.com/btcsuite/btcd/btcec/v2"
)

// KMax is BIP-352's per-group limit: a receiver looks for at most this many
// outputs (k = 0 … KMax-1) per transaction and scan key, and a sender
// creates no more for one scan key.
const KMax = 2323

// ChangeLabel is label m = 0, which BIP-352 reserves for a wallet's own
// change; a Scanner always looks for it.
const ChangeLabel = 0

// Scanner finds a wallet's silent payments in transactions, given each
// transaction's tweak and taproot output keys. It holds the scan private
// key: never log it or send it anywhere. It is safe for concurrent use
// once made.
type Scanner struct {
	scan   btcec.ModNScalar
	spend  btcec.JacobianPoint // affine
	labels map[[compressedSize]byte]label
	// labelPoints are the label points B_m − B_spend = label_m·G (affine),
	// one per distinct label in the order NewScanner was given them, the
	// change label first: Candidates adds them to P_0.
	labelPoints []btcec.JacobianPoint
}

type label struct {
	m      uint32
	scalar btcec.ModNScalar
}

// Match is one output of a transaction that belongs to the wallet.
type Match struct {
	// Output is the index of the output in the slice given to Scan.
	Output int
	// Key is the output's x-only key.
	Key [xOnlySize]byte
	// PrivKeyTweak is what the wallet adds to its spend private key (mod
	// the group order) to spend the output: t_k, plus the label's tweak
	// when labeled.
	PrivKeyTweak [32]byte
	// Labeled reports a payment to a labeled address; Label is then m.
	Labeled bool
	Label   uint32
}

// NewScanner makes a Scanner for the scan private key and the spend public
// key, looking for payments to the unlabeled address, to the change label
// and to each of labels.
func NewScanner(scanKey *btcec.PrivateKey, spendKey *btcec.PublicKey, labels []uint32) (*Scanner, error) {
	s := &Scanner{scan: scanKey.Key, labels: make(map[[compressedSize]byte]label, len(labels)+1)}
	spendKey.AsJacobian(&s.spend)
	for _, m := range append([]uint32{ChangeLabel}, labels...) {
		tw, err := LabelTweak(scanKey, m)
		if err != nil {
			return nil, err
		}
		var l btcec.ModNScalar
		l.SetBytes(&tw)
		var p btcec.JacobianPoint
		btcec.ScalarBaseMultNonConst(&l, &p)
		p.ToAffine()
		key := serializeCompressed(&p)
		if _, dup := s.labels[key]; dup {
			continue
		}
		s.labels[key] = label{m: m, scalar: l}
		s.labelPoints = append(s.labelPoints, p)
	}
	return s, nil
}

// LabelTweak is hash_BIP0352/Label(ser_256(b_scan) || ser_32(m)): the
// scalar whose point, added to the spend key, makes the address with label
// m. It fails with ErrInvalidScalar in the (negligible) case BIP-352 calls
// invalid.
func LabelTweak(scanKey *btcec.PrivateKey, m uint32) ([32]byte, error) {
	var msg [32 + 4]byte
	scanKey.Key.PutBytesUnchecked(msg[:32])
	binary.BigEndian.PutUint32(msg[32:], m)
	h := taggedHash(tagLabel, msg[:])
	var s btcec.ModNScalar
	if !scalarFromHash(&h, &s) {
		return h, fmt.Errorf("label %d: %w", m, ErrInvalidScalar)
	}
	return h, nil
}

// sharedSecretTweak sets t to t_k = hash_BIP0352/SharedSecret(ser_P(ecdh)
// || ser_32(k)).
func sharedSecretTweak(ecdh *[compressedSize]byte, k uint32, t *btcec.ModNScalar) bool {
	var msg [compressedSize + 4]byte
	copy(msg[:], ecdh[:])
	binary.BigEndian.PutUint32(msg[compressedSize:], k)
	h := taggedHash(tagSharedSecret, msg[:])
	return scalarFromHash(&h, t)
}

// Scan returns the outputs among outputs (the x-only keys of one
// transaction's taproot outputs, in any order) that pay this wallet, given
// the transaction's tweak as a tweak server serves it. It follows
// BIP-352's receiver: k counts up from 0 while outputs are found, at most
// KMax; each P_k is compared with every output left, then, for labels,
// output − P_k and −output − P_k are looked up. A tweak that is not a
// curve point fails with ErrInvalidTweak.
func (s *Scanner) Scan(tweak [TweakSize]byte, outputs [][xOnlySize]byte) ([]Match, error) {
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

	left := make([]int, len(outputs))
	for i := range left {
		left[i] = i
	}
	points := make([]btcec.JacobianPoint, len(outputs)) // lifted on first use
	lifted := make([]int8, len(outputs))                // 0 not yet, 1 ok, -1 not a point
	var found []Match
	for k := uint32(0); k < KMax && len(left) > 0; k++ {
		var tk btcec.ModNScalar
		if !sharedSecretTweak(&secret, k, &tk) {
			return found, fmt.Errorf("t_%d: %w", k, ErrInvalidScalar)
		}
		var pk btcec.JacobianPoint
		btcec.ScalarBaseMultNonConst(&tk, &pk)
		add(&pk, &s.spend)
		if isInfinity(&pk) {
			break
		}
		pk.ToAffine()
		var pkX [xOnlySize]byte
		pk.X.PutBytesUnchecked(pkX[:])
		m, at, ok := s.matchOne(&pk, &pkX, &tk, outputs, left, points, lifted)
		if !ok {
			break
		}
		found = append(found, m)
		left = append(left[:at], left[at+1:]...)
	}
	return found, nil
}

// matchOne looks for P_k among the outputs left, directly or through a
// label, and returns the match and its position in left.
func (s *Scanner) matchOne(pk *btcec.JacobianPoint, pkX *[xOnlySize]byte, tk *btcec.ModNScalar,
	outputs [][xOnlySize]byte, left []int, points []btcec.JacobianPoint, lifted []int8) (Match, int, bool) {
	var negPk btcec.JacobianPoint
	negPk.Set(pk)
	negPk.Y.Negate(1).Normalize()
	for at, i := range left {
		if outputs[i] == *pkX {
			return Match{Output: i, Key: outputs[i], PrivKeyTweak: tk.Bytes()}, at, true
		}
		if len(s.labels) == 0 {
			continue
		}
		if lifted[i] == 0 {
			lifted[i] = -1
			if liftX(outputs[i][:], false, &points[i]) {
				lifted[i] = 1
			}
		}
		if lifted[i] < 0 {
			continue
		}
		for _, neg := range [2]bool{false, true} {
			o := points[i]
			if neg {
				o.Y.Negate(1).Normalize()
			}
			var d btcec.JacobianPoint
			btcec.AddNonConst(&o, &negPk, &d)
			if isInfinity(&d) {
				continue
			}
			d.ToAffine()
			if l, ok := s.labels[serializeCompressed(&d)]; ok {
				priv := *tk
				priv.Add(&l.scalar)
				return Match{Output: i, Key: outputs[i], PrivKeyTweak: priv.Bytes(), Labeled: true, Label: l.m}, at, true
			}
		}
	}
	return Match{}, 0, false
}
