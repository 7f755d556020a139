package silentpay

import (
	"crypto/sha256"

	"github.com/btcsuite/btcd/btcec/v2"
)

// BIP-352's hash tags.
const (
	tagInputs       = "BIP0352/Inputs"
	tagSharedSecret = "BIP0352/SharedSecret"
	tagLabel        = "BIP0352/Label"
)

// maxTaggedMsg is the longest message tagged here: an outpoint and a
// compressed point (BIP0352/Inputs).
const maxTaggedMsg = outPointSize + compressedSize

const (
	compressedSize = 33
	xOnlySize      = 32
	outPointSize   = 36
)

// taggedHash is BIP-340's hash_tag(msg) = SHA256(SHA256(tag) ||
// SHA256(tag) || msg) for msg of at most maxTaggedMsg bytes, on the stack.
func taggedHash(tag string, msg []byte) [32]byte {
	var buf [2*sha256.Size + maxTaggedMsg]byte
	th := sha256.Sum256([]byte(tag))
	copy(buf[:], th[:])
	copy(buf[sha256.Size:], th[:])
	n := copy(buf[2*sha256.Size:], msg)
	return sha256.Sum256(buf[:2*sha256.Size+n])
}

// scalarFromHash reads a hash as a scalar, reporting false where BIP-352
// fails: zero, or not below the group order.
func scalarFromHash(h *[32]byte, s *btcec.ModNScalar) bool {
	overflow := s.SetBytes(h)
	return overflow == 0 && !s.IsZero()
}

// parseCompressed reads a 33-byte SEC1 compressed point into p (affine,
// Z = 1), reporting false for any other length, prefix or an x off the
// curve. It does not allocate.
func parseCompressed(b []byte, p *btcec.JacobianPoint) bool {
	if len(b) != compressedSize || (b[0] != 0x02 && b[0] != 0x03) {
		return false
	}
	return liftX(b[1:], b[0] == 0x03, p)
}

// liftX sets p to the point with x coordinate x (32 bytes, big endian) and
// the given y parity, reporting false when x is not below the field prime
// or not on the curve.
func liftX(x []byte, odd bool, p *btcec.JacobianPoint) bool {
	var fx, fy btcec.FieldVal
	if overflow := fx.SetByteSlice(x); overflow {
		return false
	}
	if !btcec.DecompressY(&fx, odd, &fy) {
		return false
	}
	p.X, p.Y = fx, fy
	p.Z.SetInt(1)
	return true
}

// isInfinity reports whether p, normalized, is the point at infinity.
func isInfinity(p *btcec.JacobianPoint) bool {
	return (p.X.IsZero() && p.Y.IsZero()) || p.Z.IsZero()
}

// serializeCompressed writes p, which must be affine (Z = 1) and finite,
// in SEC1 compressed form.
func serializeCompressed(p *btcec.JacobianPoint) [compressedSize]byte {
	var out [compressedSize]byte
	out[0] = 0x02
	if p.Y.IsOdd() {
		out[0] = 0x03
	}
	p.X.PutBytesUnchecked(out[1:])
	return out
}

// add sets sum to sum + p.
func add(sum, p *btcec.JacobianPoint) {
	var r btcec.JacobianPoint
	btcec.AddNonConst(sum, p, &r)
	*sum = r
}
