package gcs

import (
	"fmt"
	"math"
	"slices"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// Filter is a decoded-on-demand Golomb-coded set. It is immutable once made,
// so any number of goroutines may query it at once. Every Filter has passed
// a full validation pass (Build produces valid streams; NewFilter and
// NewFilterWithN check), so queries never meet a malformed stream.
type Filter struct {
	n      uint32
	params Params
	nm     uint64
	raw    []byte // CompactSize(N) followed by the stream
	off    int    // start of the stream within raw
}

// Build returns the filter of the distinct items (compared by bytes; empty
// items are items like any other) hashed with h. Items are de-duplicated
// by their bytes before counting N; different items whose 64-bit hashes
// collide each count. The stream takes about
// N·(P+1+M/2^P) bits, which callers choosing unusual parameters should
// bear in mind.
func Build(p Params, h Hasher, items [][]byte) (*Filter, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	if h == nil {
		return nil, fmt.Errorf("build: %w", ErrNilHasher)
	}
	if uint64(len(items)) > math.MaxUint32 {
		return nil, fmt.Errorf("build: %d items: %w", len(items), ErrNTooLarge)
	}
	recs := make([]hashRec, len(items))
	hashInto(recs, h, items)
	var s sorter
	recs = s.sort(recs)
	recs = dedupSorted(recs, func(i uint32) []byte { return items[i] })
	n := uint32(len(recs))
	nm := uint64(n) * p.M
	raw := appendFilter(nil, recs, p.P, nm)
	off := wirescan.CompactSizeLen(uint64(n))
	return &Filter{n: n, params: p, nm: nm, raw: raw, off: off}, nil
}

// hashInto fills recs with the hashes of items, avoiding interface dispatch
// for the SipHash fast path.
func hashInto(recs []hashRec, h Hasher, items [][]byte) {
	if sh, ok := h.(SipHasher); ok {
		for i, it := range items {
			recs[i] = hashRec{h: sh.Hash64(it), idx: uint32(i)}
		}
		return
	}
	for i, it := range items {
		recs[i] = hashRec{h: h.Hash64(it), idx: uint32(i)}
	}
}

// NewFilter returns the filter of n elements whose bare Golomb-Rice stream
// (no N prefix; the Cashu form, or BIP-158 with N carried elsewhere) is
// data. data may come from an untrusted source: it is validated fully, in
// one decode pass, and copied. It rejects, each with its sentinel from
// errors.go (wrapped with context; test with errors.Is): P outside 1..32
// (ErrBadP); M outside 1..2^32-1 (ErrBadM); an n that needs more than the
// available bits at P+1 bits per element, checked before decoding
// (ErrNExceedsData, which also wraps ErrTruncated); a stream that ends
// inside an element (ErrTruncated); a value ≥ N·M (ErrValueOutOfRange);
// any byte after the one holding the last bit of the n-th element
// (ErrTrailingData; for n=0 the stream must be empty); and non-zero
// padding bits in that last byte (ErrNonZeroPadding). Bitcoin Core accepts
// such padding; it is rejected here because no conforming encoder writes
// it and the filter header commits to the exact bytes, so such a filter
// could not verify anyway.
func NewFilter(n uint32, p Params, data []byte) (*Filter, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("new filter: %w", err)
	}
	if err := validateStream(n, p, data); err != nil {
		return nil, fmt.Errorf("new filter: N=%d, %d bytes: %w", n, len(data), err)
	}
	raw := wirescan.AppendCompactSize(make([]byte, 0, wirescan.CompactSizeLen(uint64(n))+len(data)), uint64(n))
	off := len(raw)
	raw = append(raw, data...)
	return &Filter{n: n, params: p, nm: uint64(n) * p.M, raw: raw, off: off}, nil
}

// NewFilterWithN parses the BIP-158 wire form: a canonical CompactSize N
// followed by the stream. b may come from an untrusted source: it is
// validated fully and copied. Besides what NewFilter rejects, it rejects
// N ≥ 2^32 (ErrNTooLarge), a non-canonical CompactSize (ErrNonCanonicalN)
// and a prefix that ends inside the CompactSize (ErrTruncated).
func NewFilterWithN(p Params, b []byte) (*Filter, error) {
	f, err := parseFilterWithN(p, b)
	if err != nil {
		return nil, err
	}
	f.raw = slices.Clone(f.raw)
	return f, nil
}

// parseFilterWithN is NewFilterWithN without the copy: the Filter aliases b.
func parseFilterWithN(p Params, b []byte) (*Filter, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("new filter: %w", err)
	}
	n64, off, err := readCompactSize(b)
	if err != nil {
		return nil, fmt.Errorf("new filter: %w", err)
	}
	if n64 > math.MaxUint32 {
		return nil, fmt.Errorf("new filter: N=%d: %w", n64, ErrNTooLarge)
	}
	n := uint32(n64)
	if err := validateStream(n, p, b[off:]); err != nil {
		return nil, fmt.Errorf("new filter: N=%d, %d bytes: %w", n, len(b)-off, err)
	}
	return &Filter{n: n, params: p, nm: uint64(n) * p.M, raw: b, off: off}, nil
}

// N returns the number of (distinct) elements in the filter.
func (f *Filter) N() uint32 { return f.n }

// Params returns the filter's parameters.
func (f *Filter) Params() Params { return f.params }

// Bytes returns a copy of the bare Golomb-Rice stream, without N.
func (f *Filter) Bytes() []byte { return slices.Clone(f.raw[f.off:]) }

// BytesWithN returns a copy of the BIP-158 wire form: CompactSize N followed
// by the stream.
func (f *Filter) BytesWithN() []byte { return slices.Clone(f.raw) }

// stream is the bare stream, shared; callers must not modify it.
func (f *Filter) stream() []byte { return f.raw[f.off:] }
