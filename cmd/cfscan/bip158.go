package main

import (
	"context"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/gcs"
	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
)

// BIP-157 request limits (Core's and btcd's).
const (
	checkpointInterval = 1000
	maxCFHeaders       = wire.MaxCFHeadersPerMsg     // per getcfheaders
	maxCFilters        = wire.MaxGetCFiltersReqRange // per getcfilters
	blockBatch         = 16                          // blocks per getdata
)

// filterChain is a peer's basic filter hashes and headers for heights
// from..to, verified against its checkpoints.
type filterChain struct {
	from, to    uint32
	filterHash  []chainhash.Hash // index h-from
	header      []chainhash.Hash // index h-from
	checkpoints int
}

// fetchFilterChain fetches the filter headers covering [start, end] from
// the checkpoint (or genesis) at or below start, chains them and checks
// every checkpoint on the way and the checkpoint below start.
func fetchFilterChain(ctx context.Context, p *p2pclient.Peer, chain *headerChain, cps []chainhash.Hash, start, end uint32) (*filterChain, error) {
	base := start / checkpointInterval * checkpointInterval
	fc := &filterChain{}
	var prev chainhash.Hash // filter header of base-1, or of base itself below
	from := uint32(0)
	if base > 0 {
		prev, from = cps[base/checkpointInterval-1], base+1
	}
	fc.from, fc.to = from, end
	for h := from; h <= end; {
		stop := min(h+maxCFHeaders-1, end)
		got, hashes, err := p.GetCFHeaders(ctx, h, chain.hashes[stop])
		if err != nil {
			return nil, fmt.Errorf("getcfheaders %d–%d: %w", h, stop, err)
		}
		if len(hashes) != int(stop-h+1) {
			return nil, fmt.Errorf("%w: getcfheaders %d–%d: %d filter hashes", p2pclient.ErrProtocol, h, stop, len(hashes))
		}
		if got != prev {
			return nil, fmt.Errorf("%w: filter header before height %d is %s, want %s (the checkpoint or the previous batch)", p2pclient.ErrProtocol, h, got, prev)
		}
		for i, fh := range hashes {
			height := h + uint32(i)
			prev = headers.FilterHeaderFromHash(fh, prev)
			if height > 0 && height%checkpointInterval == 0 {
				if cp := cps[height/checkpointInterval-1]; prev != cp {
					return nil, fmt.Errorf("%w: filter header at %d is %s, its checkpoint %s", p2pclient.ErrProtocol, height, prev, cp)
				}
				fc.checkpoints++
			}
			fc.filterHash = append(fc.filterHash, fh)
			fc.header = append(fc.header, prev)
		}
		h = stop + 1
	}
	if base > 0 {
		fc.checkpoints++ // the one below start, which the chain starts from
	}
	return fc, nil
}

// scanBIP158 runs the compact-filter method with peers[0] (and
// cross-checks with peers[1] when given).
func scanBIP158(ctx context.Context, peers []*p2pclient.Peer, names []string, chain *headerChain, start, end uint32, w *watchlist) (*methodReport, error) {
	began := time.Now()
	read0, written0 := bytesOf(peers)
	r := &methodReport{Method: "bip158", Peers: names, Matches: []Match{},
		Revealed: "which blocks were downloaded; filters are downloaded whole and matched locally"}
	endHash := chain.hashes[end]
	cps, err := peers[0].GetCFCheckpt(ctx, endHash)
	if err != nil {
		return nil, fmt.Errorf("%s: getcfcheckpt: %w", names[0], err)
	}
	if len(cps) != int(end/checkpointInterval) {
		return nil, fmt.Errorf("%w: %s sent %d checkpoints up to height %d, want %d", p2pclient.ErrProtocol, names[0], len(cps), end, end/checkpointInterval)
	}
	fc, err := fetchFilterChain(ctx, peers[0], chain, cps, start, end)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", names[0], err)
	}
	r.CheckpointsVerified = fc.checkpoints
	if len(peers) > 1 {
		cps2, err := peers[1].GetCFCheckpt(ctx, endHash)
		if err != nil {
			return nil, fmt.Errorf("%s: getcfcheckpt: %w", names[1], err)
		}
		if len(cps2) != len(cps) {
			return nil, fmt.Errorf("peers disagree: %s has %d checkpoints up to %d, %s %d", names[0], len(cps), end, names[1], len(cps2))
		}
		for i := range cps {
			if cps[i] != cps2[i] {
				return nil, fmt.Errorf("peers disagree on the filter header at height %d: %s says %s, %s says %s",
					(i+1)*checkpointInterval, names[0], cps[i], names[1], cps2[i])
			}
		}
		fc2, err := fetchFilterChain(ctx, peers[1], chain, cps2, start, end)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", names[1], err)
		}
		for i := range fc.header {
			if fc.header[i] != fc2.header[i] {
				return nil, fmt.Errorf("peers disagree on the filter header at height %d: %s says %s, %s says %s",
					fc.from+uint32(i), names[0], fc.header[i], names[1], fc2.header[i])
			}
		}
		r.CrossChecked = len(fc.header)
	}

	queries := w.scripts()
	var candidates []uint32
	filters := map[uint32][]byte{}
	for s := start; s <= end; {
		e := min(s+maxCFilters-1, end)
		batch, err := peers[0].GetCFilters(ctx, s, chain.hashes[e], chain.hashes[s:e+1])
		if err != nil {
			return nil, fmt.Errorf("%s: getcfilters %d–%d: %w", names[0], s, e, err)
		}
		for i, f := range batch {
			h := s + uint32(i)
			if got, want := headers.FilterHash(f), fc.filterHash[h-fc.from]; got != want {
				return nil, fmt.Errorf("%w: %s: filter of block %d hashes to %s, its filter header chain says %s", p2pclient.ErrProtocol, names[0], h, got, want)
			}
			match, err := gcs.MatchBasic(f, chain.hashes[h], queries)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: filter of block %d: %v", p2pclient.ErrProtocol, names[0], h, err)
			}
			if match {
				candidates = append(candidates, h)
				filters[h] = f
			}
		}
		r.FiltersDownloaded += len(batch)
		s = e + 1
	}

	for i := 0; i < len(candidates); i += blockBatch {
		heights := candidates[i:min(i+blockBatch, len(candidates))]
		hashes := make([]chainhash.Hash, len(heights))
		for j, h := range heights {
			hashes[j] = chain.hashes[h]
		}
		blocks, err := peers[0].GetBlocks(ctx, hashes, true)
		if err != nil {
			return nil, fmt.Errorf("%s: getdata blocks: %w", names[0], err)
		}
		for j, b := range blocks {
			h := heights[j]
			if err := checkBlock(b.Block, chain.headers[h], filters[h]); err != nil {
				return nil, fmt.Errorf("%s: block %d %s: %w", names[0], h, hashes[j], err)
			}
			found := 0
			for _, tx := range b.Block.Transactions {
				ms := w.scanTx(tx, h)
				r.Matches = append(r.Matches, ms...)
				found += len(ms)
			}
			if found == 0 {
				r.FalsePositiveBlocks++
			}
			r.BlocksFetched++
		}
	}
	read1, written1 := bytesOf(peers)
	r.BytesDownloaded, r.BytesUploaded = read1-read0, written1-written0
	r.Seconds = time.Since(began).Seconds()
	return r, nil
}

// checkBlock ties a fetched block to its synced header (the merkle root of
// its txids, with no txid repeated — CVE-2012-2459 mutations repeat them)
// and to its verified filter: every output script the filter must hold
// (non-empty, not OP_RETURN) is found in it.
func checkBlock(b *wire.MsgBlock, header wire.BlockHeader, filter []byte) error {
	if len(b.Transactions) == 0 {
		return fmt.Errorf("%w: no transactions", p2pclient.ErrProtocol)
	}
	txids := bloom.BlockTxids(b)
	seen := make(map[chainhash.Hash]struct{}, len(txids))
	for _, id := range txids {
		if _, dup := seen[id]; dup {
			return fmt.Errorf("%w: transaction %s appears twice", p2pclient.ErrProtocol, id)
		}
		seen[id] = struct{}{}
	}
	tree := bloom.NewPartialMerkleTree(txids, make([]bool, len(txids)))
	if tree.Hashes[0] != header.MerkleRoot {
		return fmt.Errorf("%w: merkle root %s, header %s", p2pclient.ErrProtocol, tree.Hashes[0], header.MerkleRoot)
	}
	f, err := gcs.NewFilterWithN(gcs.BasicParams, filter)
	if err != nil {
		return err
	}
	h := gcs.NewSipHasher(gcs.BlockKey(header.BlockHash()))
	for _, tx := range b.Transactions {
		for _, out := range tx.TxOut {
			if len(out.PkScript) == 0 || out.PkScript[0] == 0x6a {
				continue
			}
			ok, err := f.Match(h, out.PkScript)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("%w: the verified filter lacks an output script of transaction %s", p2pclient.ErrProtocol, tx.TxHash())
			}
		}
	}
	return nil
}

// bytesOf sums the bytes read from and written to peers.
func bytesOf(peers []*p2pclient.Peer) (read, written int64) {
	for _, p := range peers {
		read += p.BytesRead()
		written += p.BytesWritten()
	}
	return read, written
}
