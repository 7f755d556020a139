package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/silentpay"
)

// Errors that make cfscan sp exit with exitDisagree: a server whose data
// does not recompute to its own headers, or servers whose chains differ.
var (
	errSPInconsistent = errors.New("serves data its own commitment headers do not commit to")
	// errSPIndexWrong: a fetched block (its hash committed, its merkle root
	// checked) contradicts the tweak data or filter every server agreed on.
	errSPIndexWrong = errors.New("the servers' index contradicts the block")
	errSPDisagree   = errors.New("servers disagree")
)

// spRange is one server's data for heights lo..hi, checked against its
// headers, their chain and its checkpoints.
type spRange struct {
	lo, hi  uint32
	tweaks  [][]silentpay.TxTweak // index h-lo
	filters [][]byte
	headers []spHeader
}

// fetchSPRange fetches the range file starting at fileStart (a multiple of
// 2,000) from srv and checks heights lo..hi of it (lo the file's first
// indexed height or later, hi at most cps.Height): each block's tweak data
// and filter hash to its header record's hashes, the commitment headers
// chain from the header before the file (zero before the first indexed
// height, else the last record of the previous headers file), and every
// checkpoint and the top header of cps among them is met.
func fetchSPRange(ctx context.Context, srv *spServer, cps *spCheckpoints, fileStart, lo, hi uint32, maxFile int64) (*spRange, error) {
	first := max(fileStart, cps.StartHeight)
	need := int(hi-first) + 1
	tdBody, err := srv.get(ctx, fmt.Sprint("/sp/tweakdata/", fileStart), maxFile)
	if err != nil {
		return nil, err
	}
	tds, err := parseSPRecords(tdBody, spMaxRecord, spFileHeights)
	if err != nil {
		return nil, fmt.Errorf("%s: tweak data from %d: %w", srv, fileStart, err)
	}
	fBody, err := srv.get(ctx, fmt.Sprint("/sp/filters/", fileStart), maxFile)
	if err != nil {
		return nil, err
	}
	filters, err := parseSPRecords(fBody, spMaxRecord, spFileHeights)
	if err != nil {
		return nil, fmt.Errorf("%s: filters from %d: %w", srv, fileStart, err)
	}
	hdrs, err := fetchSPHeaders(ctx, srv, fileStart)
	if err != nil {
		return nil, err
	}
	if len(tds) < need || len(filters) < need || len(hdrs) < need {
		return nil, fmt.Errorf("%w: %s: %d tweak data, %d filters and %d headers from height %d, want %d up to %d",
			errSPFormat, srv, len(tds), len(filters), len(hdrs), first, need, hi)
	}
	var prev chainhash.Hash // zero before the first indexed height
	if first > cps.StartHeight {
		before, err := fetchSPHeaders(ctx, srv, fileStart-spFileHeights)
		if err != nil {
			return nil, err
		}
		if want := int(fileStart - max(fileStart-spFileHeights, cps.StartHeight)); len(before) != want {
			return nil, fmt.Errorf("%w: %s: %d headers before height %d, want %d", errSPFormat, srv, len(before), fileStart, want)
		}
		prev = before[len(before)-1].Header
	}
	r := &spRange{lo: lo, hi: hi}
	for i := range need {
		h := first + uint32(i)
		hdr := hdrs[i]
		c := silentpay.NewCommitment(tds[i], filters[i])
		switch {
		case c.TweakHash != hdr.TweakHash:
			return nil, fmt.Errorf("%s %w: the tweak data of height %d hashes to %s, its header record says %s", srv, errSPInconsistent, h, c.TweakHash, hdr.TweakHash)
		case c.FilterHash != hdr.FilterHash:
			return nil, fmt.Errorf("%s %w: the taproot filter of height %d hashes to %s, its header record says %s", srv, errSPInconsistent, h, c.FilterHash, hdr.FilterHash)
		case c.Header(prev) != hdr.Header:
			return nil, fmt.Errorf("%s %w: the header of height %d does not chain from the one before", srv, errSPInconsistent, h)
		}
		if cp, ok := cps.at(h); ok && cp != hdr.Header {
			return nil, fmt.Errorf("%s %w: the header of height %d is %s, its checkpoint %s", srv, errSPInconsistent, h, hdr.Header, cp)
		}
		if h == cps.Height && (hdr.Header != cps.Header || hdr.BlockHash != cps.BlockHash) {
			return nil, fmt.Errorf("%s %w: the header record of height %d differs from its checkpoints' top", srv, errSPInconsistent, h)
		}
		prev = hdr.Header
		if h < lo {
			continue
		}
		tweaks, err := silentpay.ParseTweakData(tds[i])
		if err != nil {
			return nil, fmt.Errorf("%s: height %d: %w", srv, h, err)
		}
		r.tweaks = append(r.tweaks, tweaks)
		r.filters = append(r.filters, filters[i])
		r.headers = append(r.headers, hdr)
	}
	return r, nil
}

// fetchSPHeaders fetches and parses the headers file at fileStart.
func fetchSPHeaders(ctx context.Context, srv *spServer, fileStart uint32) ([]spHeader, error) {
	body, err := srv.get(ctx, fmt.Sprint("/sp/headers/", fileStart), spHeadersFileMax)
	if err != nil {
		return nil, err
	}
	hdrs, err := parseSPHeaders(body)
	if err != nil {
		return nil, fmt.Errorf("%s: headers from %d: %w", srv, fileStart, err)
	}
	return hdrs, nil
}

// compareSPCheckpoints compares the checkpoints two servers share (those
// up to the lower of their heights) and their first indexed heights.
func compareSPCheckpoints(a, b *spServer, ca, cb *spCheckpoints) error {
	if ca.StartHeight != cb.StartHeight {
		return fmt.Errorf("%w: %s indexes from height %d, %s from %d", errSPDisagree, a, ca.StartHeight, b, cb.StartHeight)
	}
	var differ []string
	for i := range min(len(ca.Checkpoints), len(cb.Checkpoints)) {
		if ca.Checkpoints[i] != cb.Checkpoints[i] {
			differ = append(differ, fmt.Sprint(firstCheckpoint(ca.StartHeight)+uint64(i)*spCheckpointInterval))
		}
	}
	if len(differ) > 0 {
		return fmt.Errorf("%w: %s and %s have different checkpoints at heights %s", errSPDisagree, a, b, strings.Join(differ, ", "))
	}
	return nil
}

// compareSPRanges compares two servers' checked records of the same
// heights and names the heights where their tweak data, filters or block
// hashes differ (a header chain differs from the first of those on).
func compareSPRanges(a, b *spServer, ra, rb *spRange) error {
	var tweaks, filters, blocks []uint32
	firstHeader := int64(-1)
	for i := range ra.headers {
		h := ra.lo + uint32(i)
		x, y := ra.headers[i], rb.headers[i]
		if x.TweakHash != y.TweakHash {
			tweaks = append(tweaks, h)
		}
		if x.FilterHash != y.FilterHash {
			filters = append(filters, h)
		}
		if x.BlockHash != y.BlockHash {
			blocks = append(blocks, h)
		}
		if x.Header != y.Header && firstHeader < 0 {
			firstHeader = int64(h)
		}
	}
	if firstHeader < 0 && len(blocks) == 0 {
		return nil
	}
	var parts []string
	for _, d := range []struct {
		what    string
		heights []uint32
	}{{"tweak data", tweaks}, {"taproot filters", filters}, {"block hashes", blocks}} {
		if len(d.heights) > 0 {
			parts = append(parts, fmt.Sprintf("%s at heights %s", d.what, heightList(d.heights)))
		}
	}
	if firstHeader >= 0 {
		parts = append(parts, fmt.Sprintf("commitment headers from height %d on", firstHeader))
	}
	return fmt.Errorf("%w: %s and %s differ in %s", errSPDisagree, a, b, strings.Join(parts, "; "))
}

// heightList prints at most ten heights and how many more.
func heightList(hs []uint32) string {
	const show = 10
	var b strings.Builder
	for i, h := range hs[:min(len(hs), show)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, h)
	}
	if len(hs) > show {
		fmt.Fprintf(&b, " and %d more", len(hs)-show)
	}
	return b.String()
}
