package store

import (
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/store/storefile"
	"github.com/cfindexd/cfindexd/wireframe"
)

// headerValue is the value of the headers bucket at height: hash ||
// header || CRC32C.
func headerValue(height uint32, hash chainhash.Hash, h *wire.BlockHeader) []byte {
	v := make([]byte, headerValueLen)
	copy(v, hash[:])
	putHeader(v[hashLen:], h)
	putHeaderCRC(v, height)
	return v
}

// cfilterChecksum is the cfilter checksum the store keeps for filter.
func cfilterChecksum(blockHash *chainhash.Hash, filter []byte) wireframe.Checksum {
	var h wireframe.CFilterHasher
	return h.Sum(blockHash, filter)
}

// The names of storefile's temporary files, for the creation tests.
const (
	creatingInfix    = storefile.CreatingInfix
	staleCreatingAge = storefile.StaleCreatingAge
)
