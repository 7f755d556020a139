package main

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/gcs"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/silentpay"
)

// spFound is one output that pays the wallet.
type spFound struct {
	Txid   string `json:"txid"`
	Vout   uint32 `json:"vout"`
	Height uint32 `json:"height"`
	Amount int64  `json:"amount"`
	// Label is "" for the bare address, "change" for label 0, else the
	// label's number m.
	Label string `json:"label"`
	// OutputKey is the output's x-only key; PrivKeyTweak what the spend
	// private key is tweaked by to spend it.
	OutputKey    string `json:"output_key"`
	PrivKeyTweak string `json:"priv_key_tweak"`
}

// spReport is cfscan sp's output.
type spReport struct {
	Servers []string `json:"servers"`
	Blocks  string   `json:"blocks_from"`
	From    uint32   `json:"from"`
	To      uint32   `json:"to"`
	// HeadersVerified counts the heights whose tweak data and filter were
	// recomputed to each server's commitment headers; CrossChecked, those
	// compared between servers (0 with one server).
	HeadersVerified int `json:"headers_verified"`
	CrossChecked    int `json:"headers_cross_checked"`
	Tweaks          int `json:"tweaks"`
	// BlocksMatched are the blocks whose taproot filter matched a
	// candidate and were fetched; FalsePositiveBlocks held nothing.
	BlocksFetched       int       `json:"blocks_fetched"`
	FalsePositiveBlocks int       `json:"false_positive_blocks"`
	Found               []spFound `json:"found"`
	BytesDownloaded     int64     `json:"bytes_downloaded"`
	Seconds             float64   `json:"seconds"`
}

// scanSP runs cfscan sp: per 2,000-height range file, every server's data
// checked against its own headers and the others', candidates tested
// against the taproot filters, matching blocks fetched and scanned.
func scanSP(ctx context.Context, o *spOptions) (*spReport, error) {
	began := time.Now()
	scanner, err := silentpay.NewScanner(o.scanKey, o.spendKey, o.labels)
	if err != nil {
		return nil, fmt.Errorf("scanner: %w", err)
	}
	client := newSPHTTPClient()
	defer client.CloseIdleConnections()
	servers := make([]*spServer, len(o.servers))
	for i, raw := range o.servers {
		if servers[i], err = newSPServer(raw, client, o.timeout); err != nil {
			return nil, err
		}
	}
	cps := make([]*spCheckpoints, len(servers))
	for i, srv := range servers {
		body, err := srv.get(ctx, "/sp/checkpoints", spCheckpointsMax)
		if err != nil {
			return nil, err
		}
		if cps[i], err = parseSPCheckpoints(body); err != nil {
			return nil, fmt.Errorf("%s: %w", srv, err)
		}
		if i > 0 {
			if err := compareSPCheckpoints(servers[0], srv, cps[0], cps[i]); err != nil {
				return nil, err
			}
		}
	}
	top := cps[0].Height
	for _, c := range cps[1:] {
		top = min(top, c.Height)
	}
	from, to := max(uint32(o.from), cps[0].StartHeight), top
	if o.to >= 0 {
		if uint32(o.to) > top {
			return nil, fmt.Errorf("--to=%d is above the servers' height %d", o.to, top)
		}
		to = uint32(o.to)
	}
	if from > to {
		return nil, fmt.Errorf("nothing to scan: from %d to %d (the servers index from %d)", from, to, cps[0].StartHeight)
	}
	blocks, closeBlocks, err := openSPBlockSource(ctx, o)
	if err != nil {
		return nil, err
	}
	defer closeBlocks()

	rep := &spReport{Blocks: blocks.String(), From: from, To: to, Found: []spFound{}}
	for _, s := range servers {
		rep.Servers = append(rep.Servers, s.String())
	}
	blocksRead0 := blocks.BytesRead()
	last := to / spFileHeights * spFileHeights
	for fileStart := from / spFileHeights * spFileHeights; ; fileStart += spFileHeights {
		lo, hi := max(from, fileStart), min(to, fileStart+spFileHeights-1)
		ranges := make([]*spRange, len(servers))
		for i, srv := range servers {
			if ranges[i], err = fetchSPRange(ctx, srv, cps[i], fileStart, lo, hi, o.maxFile); err != nil {
				return nil, err
			}
			rep.HeadersVerified += int(hi - lo + 1)
			if i > 0 {
				if err := compareSPRanges(servers[0], srv, ranges[0], ranges[i]); err != nil {
					return nil, err
				}
				rep.CrossChecked += int(hi - lo + 1)
			}
		}
		if err := scanSPRange(ctx, scanner, ranges[0], blocks, rep); err != nil {
			return nil, err
		}
		if fileStart == last {
			break // fileStart+2000 may wrap
		}
	}
	for _, s := range servers {
		rep.BytesDownloaded += s.read.Load()
	}
	if _, ok := blocks.(*restBlocks); !ok {
		rep.BytesDownloaded += blocks.BytesRead() - blocksRead0
	}
	rep.Seconds = time.Since(began).Seconds()
	return rep, nil
}

// openSPBlockSource connects to the block source the flags name.
func openSPBlockSource(ctx context.Context, o *spOptions) (spBlockSource, func(), error) {
	if o.rest != "" {
		srv, err := newSPServer(o.rest, newSPHTTPClient(), o.timeout)
		if err != nil {
			return nil, nil, fmt.Errorf("--rest: %w", err)
		}
		return &restBlocks{srv: srv}, srv.client.CloseIdleConnections, nil
	}
	params, err := lookupChain(o.chain)
	if err != nil {
		return nil, nil, err
	}
	p, err := p2pclient.Dial(ctx, o.peer, p2pclient.Options{Params: params, Services: wire.SFNodeWitness,
		Require: wire.SFNodeWitness, Timeout: o.timeout, Transport: o.transport})
	if err != nil {
		return nil, nil, fmt.Errorf("--peer %s: %w", o.peer, err)
	}
	return &p2pBlocks{peer: p, addr: o.peer}, func() { p.Close() }, nil
}

// spCandidateBlock is a block whose taproot filter matched.
type spCandidateBlock struct {
	height uint32
	hash   chainhash.Hash
	tweaks []silentpay.TxTweak
	filter []byte
}

// scanSPRange tests every block of r against the wallet's candidates and
// fetches and scans those that match.
func scanSPRange(ctx context.Context, sc *silentpay.Scanner, r *spRange, blocks spBlockSource, rep *spReport) error {
	var matched []spCandidateBlock
	var items [][]byte
	for i, tweaks := range r.tweaks {
		h := r.lo + uint32(i)
		if len(tweaks) == 0 {
			continue
		}
		rep.Tweaks += len(tweaks)
		items = items[:0]
		for _, tw := range tweaks {
			cands, err := sc.Candidates(tw.Point)
			if err != nil {
				return fmt.Errorf("height %d transaction %d: %w", h, tw.TxIndex, err)
			}
			for j := range cands {
				items = append(items, cands[j][:])
			}
		}
		hash := r.headers[i].BlockHash
		ok, err := gcs.MatchBasic(r.filters[i], hash, items)
		if err != nil {
			return fmt.Errorf("%w: taproot filter of height %d: %v", errSPFormat, h, err)
		}
		if ok {
			matched = append(matched, spCandidateBlock{height: h, hash: hash, tweaks: tweaks, filter: r.filters[i]})
		}
	}
	for i := 0; i < len(matched); i += blockBatch {
		batch := matched[i:min(i+blockBatch, len(matched))]
		hashes := make([]chainhash.Hash, len(batch))
		for j := range batch {
			hashes[j] = batch[j].hash
		}
		got, err := blocks.Blocks(ctx, hashes)
		if err != nil {
			return err
		}
		for j, b := range got {
			c := batch[j]
			if err := checkSPBlock(b, c.hash, c.tweaks, c.filter); err != nil {
				return fmt.Errorf("%s: block %d %s: %w", blocks, c.height, c.hash, err)
			}
			found, err := scanSPBlock(sc, b, c)
			if err != nil {
				return err
			}
			rep.BlocksFetched++
			if len(found) == 0 {
				rep.FalsePositiveBlocks++
			}
			rep.Found = append(rep.Found, found...)
		}
	}
	return nil
}

// scanSPBlock runs BIP-352's full k loop over the taproot outputs of each
// transaction of b that has a tweak.
func scanSPBlock(sc *silentpay.Scanner, b *wire.MsgBlock, c spCandidateBlock) ([]spFound, error) {
	var found []spFound
	for _, tw := range c.tweaks {
		tx := b.Transactions[tw.TxIndex] // checkSPBlock checked the index
		outs := taprootKeys(tx)
		keys := make([][32]byte, len(outs))
		for i := range outs {
			keys[i] = outs[i].key
		}
		ms, err := sc.Scan(tw.Point, keys)
		if err != nil {
			return nil, fmt.Errorf("height %d transaction %d: %w", c.height, tw.TxIndex, err)
		}
		txid := tx.TxHash().String()
		slices.SortFunc(ms, func(a, b silentpay.Match) int { return cmp.Compare(outs[a.Output].vout, outs[b.Output].vout) })
		for _, m := range ms {
			o := outs[m.Output]
			f := spFound{Txid: txid, Vout: o.vout, Height: c.height, Amount: tx.TxOut[o.vout].Value,
				OutputKey: hex.EncodeToString(m.Key[:]), PrivKeyTweak: hex.EncodeToString(m.PrivKeyTweak[:])}
			switch {
			case m.Labeled && m.Label == silentpay.ChangeLabel:
				f.Label = "change"
			case m.Labeled:
				f.Label = fmt.Sprint(m.Label)
			}
			found = append(found, f)
		}
	}
	return found, nil
}

// writeSPTable prints the report for a person.
func writeSPTable(w io.Writer, rep *spReport) error {
	_, err := fmt.Fprintf(w, "Silent payments, heights %d–%d, from %d server(s); blocks from %s\n", rep.From, rep.To, len(rep.Servers), rep.Blocks)
	if err != nil {
		return err
	}
	for _, s := range rep.Servers {
		fmt.Fprintf(w, "  server %s\n", s)
	}
	fmt.Fprintf(w, "%d commitment headers recomputed, %d cross-checked; %d tweaks; %d block(s) fetched, %d false positive; %d bytes in %.1f s\n",
		rep.HeadersVerified, rep.CrossChecked, rep.Tweaks, rep.BlocksFetched, rep.FalsePositiveBlocks, rep.BytesDownloaded, rep.Seconds)
	fmt.Fprintf(w, "%d output(s) found\n", len(rep.Found))
	for _, f := range rep.Found {
		label := f.Label
		if label == "" {
			label = "-"
		}
		if _, err := fmt.Fprintf(w, "  %s:%d  height %d  %d sat  label %s\n", f.Txid, f.Vout, f.Height, f.Amount, label); err != nil {
			return err
		}
	}
	return nil
}
