package store

import (
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

// headerValue is a value of the headers bucket: hash || header.
func headerValue(hash chainhash.Hash, h *wire.BlockHeader) []byte {
	v := make([]byte, headerValueLen)
	copy(v, hash[:])
	putHeader(v[hashLen:], h)
	return v
}

// cfilterChecksum is the cfilter checksum the store keeps for filter.
func cfilterChecksum(blockHash *chainhash.Hash, filter []byte) wireframe.Checksum {
	var h wireframe.CFilterHasher
	return h.Sum(blockHash, filter)
}
