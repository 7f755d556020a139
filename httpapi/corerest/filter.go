package corerest

import (
	"net/http"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

// serveFilter answers /rest/blockfilter/basic/<hash>.<fmt>. .bin is Core's
// serialized BlockFilter: the filter type byte (0 = basic), the block hash
// in internal byte order, a CompactSize length, then the filter as BIP-158
// encodes it (CompactSize N, then the Golomb-coded set). .hex is the same
// bytes as lower-case hex plus "\n"; .json is {"filter":"<hex of the
// filter>"} plus "\n". Stale blocks whose filter is still stored are
// served too.
func serveFilter(w http.ResponseWriter, req Request, chain Chain, internalError func(http.ResponseWriter, string, error)) {
	if req.err != nil {
		writeCoreError(w, req.err)
		return
	}
	filter, found, err := chain.Filter(req.hash)
	if err != nil {
		internalError(w, "blockfilter", err)
		return
	}
	if !found {
		writeCoreError(w, &coreError{http.StatusNotFound, req.hashStr + " not found"})
		return
	}
	if req.format == formatUndef {
		writeCoreError(w, formatError)
		return
	}
	// Only the form asked for is built; nothing is hashed (the store keeps
	// the filter as it is served).
	writeCoreBody(w, req.format, [][]byte{blockFilterPrefix(req.hash, filter), filter}, jsonHexField{"filter", filter})
}

// blockFilterPrefix is what comes before the encoded filter (which starts
// with its own CompactSize N) in Core's BlockFilter serialization: filter
// type byte, block hash in internal order, CompactSize length. It is also
// the P2P cfilter message's payload prefix (wireframe.PutCFilterPrefix).
func blockFilterPrefix(hash chainhash.Hash, filter []byte) []byte {
	out := make([]byte, wireframe.CFilterPrefixLen(len(filter)))
	wireframe.PutCFilterPrefix(out, &hash, len(filter))
	return out
}

// serveFilterHeaders answers /rest/blockfilterheaders/basic/...: the
// filter headers of the active chain from the given block upward, at most
// count of them. .bin is 32 bytes each in internal order, .hex their hex
// plus "\n", .json an array of display-order hex strings plus "\n". A block
// that is unknown or not on the active chain gives an empty 200 (Core's
// behaviour).
func serveFilterHeaders(w http.ResponseWriter, req Request, chain Chain, internalError func(http.ResponseWriter, string, error)) {
	if req.err != nil {
		writeCoreError(w, req.err)
		return
	}
	fhs, err := chain.FilterHeadersFrom(req.hash, req.count)
	if err != nil {
		internalError(w, "blockfilterheaders", err)
		return
	}
	if req.format == formatUndef {
		writeCoreError(w, formatError)
		return
	}
	raw := make([]byte, 0, len(fhs)*chainhash.HashSize)
	for _, fh := range fhs {
		raw = append(raw, fh[:]...)
	}
	writeCoreBody(w, req.format, [][]byte{raw}, jsonHashArray(raw))
}
