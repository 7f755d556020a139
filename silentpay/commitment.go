package silentpay

import (
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/cfindexd/cfindexd/headers"
)

// Commitment is what the silent-payment header chain commits to for one
// block (docs/silent-payments.md, "Commitment chain").
type Commitment struct {
	// TweakHash is the double SHA-256 of the block's tweak data.
	TweakHash chainhash.Hash
	// FilterHash is the double SHA-256 of its taproot filter in wire form,
	// as BIP-157's filter hash.
	FilterHash chainhash.Hash
}

// NewCommitment hashes a block's tweak data and taproot filter (wire
// form).
func NewCommitment(tweakData, filter []byte) Commitment {
	return Commitment{TweakHash: chainhash.DoubleHashH(tweakData), FilterHash: headers.FilterHash(filter)}
}

// Commitment returns the block's commitment.
func (b *Block) Commitment() Commitment {
	return NewCommitment(AppendTweakData(nil, b.Tweaks), b.Filter)
}

// Hash is the block's entry in a getcfheaders-style answer: the double
// SHA-256 of TweakHash || FilterHash. Given one of the two hashes, a client
// checks the other part alone.
func (c Commitment) Hash() chainhash.Hash {
	var buf [2 * chainhash.HashSize]byte
	copy(buf[:], c.TweakHash[:])
	copy(buf[chainhash.HashSize:], c.FilterHash[:])
	return chainhash.DoubleHashH(buf[:])
}

// Header chains c onto prev, the previous block's header (the zero hash
// before the first indexed block): the double SHA-256 of c.Hash() || prev,
// BIP-157's construction.
func (c Commitment) Header(prev chainhash.Hash) chainhash.Hash {
	return headers.FilterHeaderFromHash(c.Hash(), prev)
}
