package main

import (
	"context"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
)

// filteredBatch is how many blocks one getdata asks for.
const filteredBatch = 250

// scanBIP37 runs the Bloom-filter method: one filter per rotation epoch of
// the range, loaded anew at each epoch, and every block of the range asked
// for as a filtered block.
func scanBIP37(ctx context.Context, p *p2pclient.Peer, name string, chain *headerChain, start, end uint32,
	w *watchlist, pol bloom.Privacy, rot bloom.Rotation, witness bool) (*methodReport, error) {

	began := time.Now()
	read0, written0 := p.BytesRead(), p.BytesWritten()
	r := &methodReport{Method: "bip37", Peers: []string{name}, Matches: []Match{}, RotationInterval: max(rot.Interval, 1),
		Revealed: "a Bloom filter per rotation holding the wallet's script pushes and outpoints among noise; every transaction it matches"}
	for h := start; h <= end; {
		epoch := rot.Epoch(h)
		segEnd := min(end, rot.EpochStart(epoch+1)-1)
		f, comp, err := rot.Filter(w.bloomElements(), pol, epoch)
		if err != nil {
			return nil, err
		}
		if err := p.LoadFilter(ctx, f); err != nil {
			return nil, fmt.Errorf("%s: filterload: %w", name, err)
		}
		r.FiltersLoaded++
		r.Elements += comp.Elements
		r.NoiseElements += comp.NoiseElements
		r.MaxExpectedFPR = max(r.MaxExpectedFPR, comp.ExpectedFPR)
		for b := h; b <= segEnd; {
			e := min(b+filteredBatch-1, segEnd)
			fbs, err := p.GetFilteredBlocks(ctx, chain.hashes[b:e+1], witness)
			if err != nil {
				return nil, fmt.Errorf("%s: filtered blocks %d–%d: %w", name, b, e, err)
			}
			for i, fb := range fbs {
				height := b + uint32(i)
				if _, err := fb.Verify(chain.hashes[height]); err != nil {
					return nil, fmt.Errorf("%s: block %d: %w", name, height, err)
				}
				r.BlocksFetched++
				if len(fb.Txs) == 0 {
					continue
				}
				r.BlocksWithTxs++
				found := 0
				for _, tx := range fb.Txs {
					ms := w.scanTx(tx, height)
					r.Matches = append(r.Matches, ms...)
					r.MatchedTxs++
					if len(ms) == 0 {
						r.FalsePositiveTxs++
					}
					found += len(ms)
				}
				if found == 0 {
					r.FalsePositiveBlocks++
				}
			}
			b = e + 1
		}
		h = segEnd + 1
	}
	if n := r.Elements + r.NoiseElements; n > 0 {
		r.NoiseShare = float64(r.NoiseElements) / float64(n)
	}
	r.BytesDownloaded, r.BytesUploaded = p.BytesRead()-read0, p.BytesWritten()-written0
	r.Seconds = time.Since(began).Seconds()
	return r, nil
}

// parseBloomFlags reads --bloomflags.
func parseBloomFlags(s string) (wire.BloomUpdateType, error) {
	switch s {
	case "all":
		return wire.BloomUpdateAll, nil
	case "none":
		return wire.BloomUpdateNone, nil
	case "p2pubkeyonly":
		return wire.BloomUpdateP2PubkeyOnly, nil
	}
	return 0, fmt.Errorf("--bloomflags %q: want all, none or p2pubkeyonly", s)
}
