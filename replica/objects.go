package replica

import (
	"bytes"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/cfindexd/cfindexd/replica/source"
	"github.com/cfindexd/cfindexd/store"
)

// parseHeaders splits a headers object (whose size the source checked)
// into its block headers.
func parseHeaders(b []byte) ([]wire.BlockHeader, error) {
	if len(b)%source.HeaderSize != 0 {
		return nil, fmt.Errorf("%d bytes is not a whole number of headers", len(b))
	}
	out := make([]wire.BlockHeader, len(b)/source.HeaderSize)
	for i := range out {
		if err := out[i].Deserialize(bytes.NewReader(b[i*source.HeaderSize : (i+1)*source.HeaderSize])); err != nil {
			return nil, fmt.Errorf("header %d: %w", i, err)
		}
	}
	return out, nil
}

// parseFilterHeaders splits a filter-headers object into its hashes.
func parseFilterHeaders(b []byte) ([]chainhash.Hash, error) {
	if len(b)%source.FilterHeaderSize != 0 {
		return nil, fmt.Errorf("%d bytes is not a whole number of filter headers", len(b))
	}
	out := make([]chainhash.Hash, len(b)/source.FilterHeaderSize)
	for i := range out {
		copy(out[i][:], b[i*source.FilterHeaderSize:])
	}
	return out, nil
}

// parseFilters splits a filters object into n filters, each a sub-slice of
// b: a CompactSize length, then the filter (1..store.MaxFilterSize bytes),
// n times, and nothing after. Every length is checked against the bytes
// left before it is used.
func parseFilters(b []byte, n int) ([][]byte, error) {
	out := make([][]byte, 0, n)
	for i := range n {
		size, k, err := wirescan.ReadCompactSize(b)
		if err != nil {
			return nil, fmt.Errorf("filter %d: length: %w", i, err)
		}
		b = b[k:]
		if size == 0 || size > store.MaxFilterSize || size > uint64(len(b)) {
			return nil, fmt.Errorf("filter %d: length %d with %d bytes left (at most %d)", i, size, len(b), store.MaxFilterSize)
		}
		out = append(out, b[:size:size])
		b = b[size:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%d bytes after the last filter", len(b))
	}
	return out, nil
}

// anchor is the stored block below a run of new blocks: its hash and
// filter header (zero values below genesis).
type anchor struct {
	Hash         chainhash.Hash
	FilterHeader chainhash.Hash
}

// checkRange checks one fetched range against the chain's rules, from the
// stored block below it (prev), and returns its blocks as store records.
// Errors name the object at fault.
func checkRange(hc *headerChecker, ro *source.RangeObjects, prev anchor) ([]store.BlockRecord, error) {
	r := &ro.Range
	hname, fhname, fname := source.HeadersName(r.Start), source.FilterHeadersName(r.Start), source.FiltersName(r.Start)
	hdrs, err := parseHeaders(ro.Headers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", hname, ErrInvalidChain, err)
	}
	hashes, err := hc.check(r.Start, prev.Hash, hdrs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", hname, err)
	}
	if last := hashes[len(hashes)-1]; last != r.EndBlockHash {
		return nil, fmt.Errorf("%s: %w: range %d's end_block_hash is %s, but headers/%d ends with %s", source.ManifestName, ErrInvalidChain, r.Start, r.EndBlockHash, r.Start, last)
	}
	fhs, err := parseFilterHeaders(ro.FilterHeaders)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", fhname, ErrInvalidChain, err)
	}
	filters, err := parseFilters(ro.Filters, len(hdrs))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", fname, ErrInvalidChain, err)
	}
	filterHashes, err := chainFilters(r.Start, prev.FilterHeader, filters, fhs)
	if err != nil {
		return nil, fmt.Errorf("%s and %s: %w", fname, fhname, err)
	}
	if last := fhs[len(fhs)-1]; last != r.EndFilterHeader {
		return nil, fmt.Errorf("%s: %w: range %d's end_filter_header is %s, but the filter-header chain ends with %s", source.ManifestName, ErrInvalidChain, r.Start, r.EndFilterHeader, last)
	}
	recs := make([]store.BlockRecord, len(hdrs))
	for i := range recs {
		recs[i] = store.BlockRecord{
			Height: r.Start + uint32(i), Hash: hashes[i], Header: hdrs[i],
			Filter: filters[i], FilterHeader: fhs[i], FilterHash: filterHashes[i],
		}
	}
	return recs, nil
}
