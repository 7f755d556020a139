package wirescan

import (
	"crypto/sha256"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// MerkleRoot computes a block's merkle root from its txids (Bitcoin's
// tree: pairs double-SHA256 hashed, an odd last node paired with itself).
// It is what ties a block fetched over P2P to its header, whose hash is
// checked against the one asked for.
func MerkleRoot(txids []chainhash.Hash) chainhash.Hash {
	if len(txids) == 0 {
		return chainhash.Hash{}
	}
	level := append([]chainhash.Hash(nil), txids...)
	var pair [2 * chainhash.HashSize]byte
	for len(level) > 1 {
		next := level[:0]
		for i := 0; i < len(level); i += 2 {
			j := min(i+1, len(level)-1)
			copy(pair[:chainhash.HashSize], level[i][:])
			copy(pair[chainhash.HashSize:], level[j][:])
			first := sha256.Sum256(pair[:])
			next = append(next, sha256.Sum256(first[:]))
		}
		level = next
	}
	return level[0]
}
