package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

// Content types exactly as Core sends them.
const (
	ctBinary = "application/octet-stream"
	ctText   = "text/plain"
	ctJSON   = "application/json"
	// ctUnknownEndpoint is what libevent sends with Core's empty 404 for
	// a /rest/ path no handler claims.
	ctUnknownEndpoint = "text/html; charset=ISO-8859-1"
)

// writeCoreError sends err the way Core's RESTERR does.
func writeCoreError(w http.ResponseWriter, e *coreError) {
	msg := e.msg + "\r\n"
	w.Header().Set("Content-Type", ctText)
	w.Header().Set("Content-Length", strconv.Itoa(len(msg)))
	w.WriteHeader(e.status)
	_, _ = w.Write([]byte(msg))
}

// formatError is Core's answer to a missing or unknown extension, which it
// gives only after the block lookup.
var formatError = &coreError{http.StatusNotFound, "output format not found (available: " + availableFormats + ")"}

// serveCoreFilter answers /rest/blockfilter/basic/<hash>.<fmt>. .bin is
// Core's serialized BlockFilter: the filter type byte (0 = basic), the
// block hash in internal byte order, a CompactSize length, then the filter
// as BIP-158 encodes it (CompactSize N, then the Golomb-coded set). .hex is
// the same bytes as lower-case hex plus "\n"; .json is {"filter":"<hex of
// the filter>"} plus "\n". Stale blocks whose filter is still stored are
// served too.
func (s *Server) serveCoreFilter(w http.ResponseWriter, req coreRequest) {
	if req.err != nil {
		writeCoreError(w, req.err)
		return
	}
	rec, _, err := s.view.FilterByHash(req.hash)
	if errors.Is(err, ErrNotFound) {
		e := &coreError{http.StatusNotFound, req.hashStr + " not found"}
		writeCoreError(w, e)
		return
	}
	if err != nil {
		s.internalError(w, "blockfilter", err)
		return
	}
	if req.format == formatUndef {
		writeCoreError(w, formatError)
		return
	}
	// Only the form asked for is built; nothing is hashed (the store keeps
	// the filter as it is served).
	writeCoreBody(w, req.format, [][]byte{blockFilterPrefix(req.hash, rec.Filter), rec.Filter}, jsonHexField{"filter", rec.Filter})
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

// serveCoreFilterHeaders answers /rest/blockfilterheaders/basic/...: the
// filter headers of the active chain from the given block upward, at most
// count of them. .bin is 32 bytes each in internal order, .hex their hex
// plus "\n", .json an array of display-order hex strings plus "\n". A block
// that is unknown or not on the active chain gives an empty 200 (Core's
// behaviour).
func (s *Server) serveCoreFilterHeaders(w http.ResponseWriter, req coreRequest) {
	if req.err != nil {
		writeCoreError(w, req.err)
		return
	}
	var fhs []chainhash.Hash
	err := s.view.Read(func(r ChainReader) (err error) {
		fhs, err = activeFrom(r, req.hash, req.count, r.FilterHeadersByHeight)
		return err
	})
	if err != nil {
		s.internalError(w, "blockfilterheaders", err)
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

// activeFrom reads with read the active chain from the block hash upward,
// at most count heights, all from the one state r reads. A hash that is
// unknown or not on the active chain gives nothing, as in Core.
func activeFrom[T any](r ChainReader, hash chainhash.Hash, count int, read func(start, end uint32) ([]T, error)) ([]T, error) {
	height, active, err := r.HeightOf(hash)
	if errors.Is(err, ErrNotFound) || (err == nil && !active) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	tip, ok := r.Tip()
	if !ok || tip.Height < height {
		return nil, fmt.Errorf("active block %s at height %d above the tip %d (have tip %v)", hash, height, tip.Height, ok)
	}
	end := min(uint64(height)+uint64(count)-1, uint64(tip.Height))
	return read(height, uint32(end))
}
