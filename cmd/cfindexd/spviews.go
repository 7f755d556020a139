package main

import (
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/httpapi"
	"github.com/cfindexd/cfindexd/silentpay"
	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/store/spindex"
)

// httpSPIndex adapts the store's silent-payment index to httpapi.SPIndex:
// it parses tweak data (silentpay.ParseTweakData), copies the commitment
// headers, and maps the index's ErrNotFound, ErrNotEnabled and checksum
// failures onto httpapi.ErrNotFound (a damaged value is answered as a
// height the index lacks until it is repaired).
type httpSPIndex struct{ x *spindex.Index }

var _ httpapi.SPIndex = httpSPIndex{}

// newHTTPSPIndex returns x for the HTTP server, or nil when the index is
// off (x nil), which httpapi answers 404.
func newHTTPSPIndex(x *spindex.Index) httpapi.SPIndex {
	if x == nil {
		return nil
	}
	return httpSPIndex{x}
}

func spNotFound(err error) error {
	if err != nil && (errors.Is(err, spindex.ErrNotFound) || errors.Is(err, spindex.ErrNotEnabled) || errors.Is(err, spindex.ErrChecksumMismatch)) {
		return fmt.Errorf("%w: %w", httpapi.ErrNotFound, err)
	}
	return err
}

// SPState implements httpapi.SPIndex.
func (v httpSPIndex) SPState() httpapi.SPState {
	st, _ := v.x.State()
	return httpapi.SPState{Start: st.Start, Next: st.Next}
}

// SPTweaks implements httpapi.SPIndex: the tweak data and its parse. The
// commitment headers are not filled in (no answer serving tweaks needs
// them).
func (v httpSPIndex) SPTweaks(start, end uint32) ([]httpapi.SPBlock, error) {
	recs, err := v.x.TweakData(start, end)
	if err != nil {
		return nil, spNotFound(err)
	}
	out := make([]httpapi.SPBlock, len(recs))
	for i, r := range recs {
		tweaks, err := silentpay.ParseTweakData(r.TweakData)
		if err != nil {
			return nil, fmt.Errorf("tweak data at %d: %w", r.Height, err)
		}
		out[i] = httpapi.SPBlock{Height: r.Height, BlockHash: r.BlockHash, TweakData: r.TweakData, Tweaks: make([]httpapi.SPTweak, len(tweaks))}
		for j, t := range tweaks {
			out[i].Tweaks[j] = httpapi.SPTweak{Point: t.Point, MaxValue: t.MaxTaprootValue}
		}
	}
	return out, nil
}

// SPFilters implements httpapi.SPIndex, one read per height.
func (v httpSPIndex) SPFilters(start, end uint32) ([]httpapi.SPBlock, error) {
	if end < start || end-start >= httpapi.MaxRange {
		return nil, fmt.Errorf("taproot filters %d..%d: bad range", start, end)
	}
	out := make([]httpapi.SPBlock, 0, end-start+1)
	for h := uint64(start); h <= uint64(end); h++ {
		r, err := v.x.FilterByHeight(uint32(h))
		if err != nil {
			return nil, spNotFound(err)
		}
		out = append(out, httpapi.SPBlock{Height: r.Height, BlockHash: r.BlockHash, Filter: r.Filter})
	}
	return out, nil
}

// SPHeaders implements httpapi.SPIndex.
func (v httpSPIndex) SPHeaders(start, end uint32) ([]httpapi.SPBlock, error) {
	recs, err := v.x.Headers(start, end)
	if err != nil {
		return nil, spNotFound(err)
	}
	return spHeaderBlocks(recs), nil
}

// SPCheckpoints implements httpapi.SPIndex.
func (v httpSPIndex) SPCheckpoints(stop chainhash.Hash) ([]httpapi.SPBlock, error) {
	recs, err := v.x.Checkpoints(stop)
	if err != nil {
		return nil, spNotFound(err)
	}
	return spHeaderBlocks(recs), nil
}

func spHeaderBlocks(recs []spindex.HeaderRecord) []httpapi.SPBlock {
	out := make([]httpapi.SPBlock, len(recs))
	for i, r := range recs {
		out[i] = httpapi.SPBlock{Height: r.Height, BlockHash: r.BlockHash, Header: r.Header, TweakHash: r.TweakHash, FilterHash: r.FilterHash}
	}
	return out
}

// spIndexOf returns st's silent-payment index when the silentpayments key
// turned it on, else nil.
func spIndexOf(cfg Config, st *store.Store) *spindex.Index {
	if !cfg.SilentPayments {
		return nil
	}
	return st.SilentPayments()
}
