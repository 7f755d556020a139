package main

import (
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/p2p/spfilter"
	"github.com/cfindexd/cfindexd/store/spindex"
)

// p2pSPView adapts the store's silent-payment index to spfilter.View, the
// P2P server's experimental filter type. The index's ErrNotFound,
// ErrNotEnabled and checksum failures become spfilter.ErrNotFound: the
// peer's request is ignored (a damaged value is a height the index lacks
// until it is repaired), never answered from other data.
type p2pSPView struct{ x *spindex.Index }

var _ spfilter.View = p2pSPView{}

// newP2PSPView returns x for the P2P server, or nil when the index is off
// (x nil), which refuses the type as unknown.
func newP2PSPView(x *spindex.Index) spfilter.View {
	if x == nil {
		return nil
	}
	return p2pSPView{x}
}

func spP2PNotFound(err error) error {
	if err != nil && (errors.Is(err, spindex.ErrNotFound) || errors.Is(err, spindex.ErrNotEnabled) || errors.Is(err, spindex.ErrChecksumMismatch)) {
		return fmt.Errorf("%w: %w", spfilter.ErrNotFound, err)
	}
	return err
}

// Range implements spfilter.View.
func (v p2pSPView) Range() (start, next uint32) {
	st, _ := v.x.State()
	return st.Start, st.Next
}

// Block implements spfilter.View: the tweak data and the filter are two
// reads, so a block replaced between them (a reorg) is answered as not
// found.
func (v p2pSPView) Block(height uint32) (spfilter.Block, error) {
	tweaks, err := v.x.TweakData(height, height)
	if err != nil {
		return spfilter.Block{}, spP2PNotFound(err)
	}
	if len(tweaks) != 1 {
		return spfilter.Block{}, fmt.Errorf("tweak data at %d: %d records", height, len(tweaks))
	}
	filter, err := v.x.FilterByHeight(height)
	if err != nil {
		return spfilter.Block{}, spP2PNotFound(err)
	}
	if filter.BlockHash != tweaks[0].BlockHash {
		return spfilter.Block{}, fmt.Errorf("%w: height %d changed from %s to %s between reads", spfilter.ErrNotFound, height, tweaks[0].BlockHash, filter.BlockHash)
	}
	return spfilter.Block{BlockHash: filter.BlockHash, TweakData: tweaks[0].TweakData, Filter: filter.Filter}, nil
}

// Headers implements spfilter.View.
func (v p2pSPView) Headers(start, end uint32) ([]spfilter.Header, error) {
	recs, err := v.x.Headers(start, end)
	if err != nil {
		return nil, spP2PNotFound(err)
	}
	return spP2PHeaders(recs), nil
}

// Checkpoints implements spfilter.View.
func (v p2pSPView) Checkpoints(stop chainhash.Hash) ([]spfilter.Header, error) {
	recs, err := v.x.Checkpoints(stop)
	if err != nil {
		return nil, spP2PNotFound(err)
	}
	return spP2PHeaders(recs), nil
}

func spP2PHeaders(recs []spindex.HeaderRecord) []spfilter.Header {
	out := make([]spfilter.Header, len(recs))
	for i := range recs {
		out[i] = spfilter.Header{Height: recs[i].Height, BlockHash: recs[i].BlockHash, Header: recs[i].Header, Commitment: recs[i].CommitmentHash()}
	}
	return out
}
