package wireframe

import "github.com/btcsuite/btcd/chainhash/v2"

// CFilterChecksum is CFilterHasher.Sum with a hasher of its own.
func CFilterChecksum(blockHash *chainhash.Hash, filter []byte) Checksum {
	var h CFilterHasher
	return h.Sum(blockHash, filter)
}
