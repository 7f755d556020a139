package indexer

import (
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/gcs"
	"github.com/cfindexd/cfindexd/silentpay"
	"github.com/cfindexd/cfindexd/store/spindex"
)

// blockBuilders are one worker's builders: the basic filter's always, and
// the silent-payment data's for the heights from spFrom when spOn. Both
// read the same fetched block and spent scripts, so the index costs no
// extra fetch.
type blockBuilders struct {
	filter gcs.BasicBuilder
	sp     silentpay.BlockBuilder
	spOn   bool
	spFrom uint32
}

// spWanted tells whether the block at h gets silent-payment data.
func (b *blockBuilders) spWanted(h uint32) bool { return b.spOn && h >= b.spFrom }

// buildSP builds the silent-payment data of the raw block at h (nil when
// not wanted).
func (b *blockBuilders) buildSP(h uint32, raw []byte, prevScripts [][]byte) (*silentpay.Block, error) {
	if !b.spWanted(h) {
		return nil, nil
	}
	blk, err := b.sp.Build(raw, prevScripts)
	if err != nil {
		return nil, fmt.Errorf("silent payments of block at height %d: %w", h, err)
	}
	return &blk, nil
}

// buildSPMsg is buildSP for a decoded block.
func (b *blockBuilders) buildSPMsg(h uint32, block *wire.MsgBlock, prevScripts [][]byte) (*silentpay.Block, error) {
	if !b.spWanted(h) {
		return nil, nil
	}
	blk, err := b.sp.BuildMsgBlock(block, prevScripts)
	if err != nil {
		return nil, fmt.Errorf("silent payments of block at height %d: %w", h, err)
	}
	return &blk, nil
}

// spPlan is what a round does for the silent-payment index: the round
// builds and attaches the entries of heights from `from` (the index's
// frontier once a pending reorg has trimmed it), chaining headers from
// prev. on is false when the index is off or the frontier lies below the
// round's first height: a backfill (SPBackfill) then owns the gap, and
// this round writes filters only.
type spPlan struct {
	on   bool
	from uint32
	prev chainhash.Hash
}

// planSP returns the round's spPlan for a round starting at start.
func (f *Follower) planSP(start uint32, reorg *pendingReorg) (spPlan, error) {
	x := f.cfg.SilentPayments
	if x == nil {
		return spPlan{}, nil
	}
	st, enabled := x.State()
	if !enabled {
		return spPlan{}, nil
	}
	p := spPlan{on: true, from: st.Next, prev: st.Header}
	if reorg != nil && p.from > reorg.Fork+1 {
		p.from, p.prev = max(st.Start, reorg.Fork+1), chainhash.Hash{}
		if p.from > st.Start {
			hs, err := x.Headers(p.from-1, p.from-1)
			if err != nil {
				return spPlan{}, fmt.Errorf("%w: commitment header at the fork %d: %w", errStore, p.from-1, err)
			}
			p.prev = hs[0].Header
		}
	}
	p.on = p.from >= start
	return p, nil
}

// attach gives rec, the next record in height order, its silent-payment
// entry when it is the one the plan waits for, and moves the plan on.
func (p *spPlan) attach(r *fetched) {
	if !p.on || r.sp == nil || r.rec.Height != p.from {
		return
	}
	// Sized exactly: the batch holds this for up to BatchBlocks blocks,
	// and append's doubling would keep up to as much again.
	data := silentpay.AppendTweakData(make([]byte, 0, silentpay.TweakDataSize(r.sp.Tweaks)), r.sp.Tweaks)
	blk := spindex.NewBlock(data, r.sp.Filter, p.prev)
	r.rec.SilentPay = &blk
	p.prev = blk.Header
	p.from++
}
