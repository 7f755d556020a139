package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/cfindexd/cfindexd/rangefile"
)

// The silent-payment range files (/sp/tweaks/<dust>/<start>, block-dn's;
// /sp/tweakdata, /sp/filters and /sp/headers /<start>) and /sp/checkpoints,
// byte for byte as docs/silent-payments.md ("Serving") specifies, served
// like bulk files: bulk slots, minimum rate, ETag, immutable when final.

// Sizes of the silent-payment files.
const (
	spHeaderRecord = 4 * chainhash.HashSize
	// spChunk is how many blocks one store read fetches while a tweak or
	// filter file streams (memory.go).
	spChunk = 8
)

// spRange resolves an /sp/ range file against the tip and the index. A
// non-empty refusal is the text of a 404 instead.
func (s *Server) spRange(t target, tip Tip, have bool) (start, end uint32, final bool, refusal string) {
	sp := s.cfg.SilentPayments
	if sp == nil {
		return 0, 0, false, "the silent-payment index is not enabled"
	}
	st := sp.SPState()
	if !have || st.Next == st.Start {
		return 0, 0, false, "the silent-payment index holds no block yet"
	}
	top := min(st.Next-1, tip.Height)
	if t.start > top {
		return 0, 0, false, "range starts above the silent-payment index's height " + strconv.FormatUint(uint64(top), 10)
	}
	full := uint64(t.start) + BulkInterval - 1
	end = uint32(min(full, uint64(top)))
	start = t.start
	if t.sp.file != spFileTweaks && start < st.Start {
		if end < st.Start {
			return 0, 0, false, "range lies below the silent-payment index's first height " + strconv.FormatUint(uint64(st.Start), 10)
		}
		start = st.Start
	}
	return start, end, uint64(end) == full && isFinal(end, tip.Height, s.cfg.ReorgSafetyDepth), ""
}

// spFile describes the /sp/ range file t names, whose records start at
// start.
func (s *Server) spFile(t target, start uint32) bulkFile {
	sp := s.cfg.SilentPayments
	f := bulkFile{chunk: spChunk, endCommit: func(_ ChainReader, end uint32) (chainhash.Hash, error) {
		if end < sp.SPState().Start {
			return chainhash.Hash{}, nil // only empty records, fixed by the end block's hash
		}
		hs, err := sp.SPHeaders(end, end)
		if err != nil {
			return chainhash.Hash{}, err
		}
		return hs[0].Header, nil
	}}
	switch t.sp.file {
	case spFileTweaks:
		f.kind = "sptweaks-" + strconv.FormatUint(t.sp.dust, 10)
		f.prefix = rangefile.AppendBlockDNHeader(nil, uint32(s.cfg.Net), start, t.sp.dust)
		f.read = spReader(sp, sp.SPTweaks, func(dst []byte, b *SPBlock) []byte { return rangefile.AppendBlockDNRecord(dst, b.Tweaks, t.sp.dust) })
	case spFileTweakData:
		f.kind = "sptweakdata"
		f.read = spReader(sp, sp.SPTweaks, func(dst []byte, b *SPBlock) []byte {
			return append(wirescan.AppendCompactSize(dst, uint64(len(b.TweakData))), b.TweakData...)
		})
	case spFileFilters:
		f.kind = "spfilters"
		f.read = spReader(sp, sp.SPFilters, func(dst []byte, b *SPBlock) []byte {
			return append(wirescan.AppendCompactSize(dst, uint64(len(b.Filter))), b.Filter...)
		})
	case spFileHeaders:
		f.kind, f.itemSize, f.chunk = "spheaders", spHeaderRecord, MaxRange
		f.read = spReader(sp, sp.SPHeaders, appendSPHeader)
	}
	return f
}

// spReader returns a bulkFile read function that appends the records of
// heights a..b: empty block-dn records below the index's first height,
// then the blocks fetch returns, each through appendBlock. The blocks must
// be of the chain v reads: the last one's hash is checked against it.
func spReader(sp SPIndex, fetch func(start, end uint32) ([]SPBlock, error), appendBlock func([]byte, *SPBlock) []byte) func(ChainReader, uint32, uint32, chainhash.Hash, []byte) ([]byte, chainhash.Hash, error) {
	return func(v ChainReader, a, b uint32, prev chainhash.Hash, dst []byte) ([]byte, chainhash.Hash, error) {
		first := sp.SPState().Start
		for h := uint64(a); h <= uint64(b) && h < uint64(first); h++ {
			dst = append(dst, 0)
		}
		if b < first {
			return dst, prev, nil
		}
		lo := max(a, first)
		blocks, err := fetch(lo, b)
		if err != nil {
			return dst, prev, err
		}
		if len(blocks) != int(b-lo)+1 {
			return dst, prev, fmt.Errorf("silent-payment blocks %d..%d: %d of them: %w", lo, b, len(blocks), ErrNotFound)
		}
		hash, err := v.HashAt(b)
		if err != nil {
			return dst, prev, err
		}
		if blocks[len(blocks)-1].BlockHash != hash {
			return dst, prev, fmt.Errorf("silent-payment block at %d: %w", b, ErrViewChanged)
		}
		for i := range blocks {
			dst = appendBlock(dst, &blocks[i])
		}
		return dst, hash, nil
	}
}

// appendSPHeader appends one /sp/headers record.
func appendSPHeader(dst []byte, b *SPBlock) []byte {
	dst = append(dst, b.BlockHash[:]...)
	dst = append(dst, b.Header[:]...)
	dst = append(dst, b.TweakHash[:]...)
	return append(dst, b.FilterHash[:]...)
}

// spCheckpoints is the body of /sp/checkpoints.
type spCheckpoints struct {
	StartHeight uint32   `json:"start_height"`
	Height      uint32   `json:"height"`
	BlockHash   string   `json:"block_hash"`
	Header      string   `json:"header"`
	Interval    int      `json:"interval"`
	Checkpoints []string `json:"checkpoints"`
}

// serveSPRoute answers an /sp/ or /blindbit/ request within a bulk slot.
func (s *Server) serveSPRoute(w *minRateWriter, r *http.Request, t target, began time.Time) {
	if s.cfg.SilentPayments == nil {
		if t.route == routeBlindBit {
			writeBlindBitError(w, http.StatusNotFound, "the silent-payment index is not enabled")
		} else {
			writeText(w, http.StatusNotFound, "the silent-payment index is not enabled")
		}
		return
	}
	s.serveBulkRoute(w, r, began, func() {
		switch t.route {
		case routeSPCheckpoints:
			s.serveSPCheckpoints(w)
		case routeBlindBit:
			s.serveBlindBit(w, t)
		default:
			s.serveBulkFile(w, r, t)
		}
	})
}

// spTop returns the highest height both indexed by the silent-payment
// index and on the active chain as v reads it, with its hash.
func (s *Server) spTop(v ChainReader) (st SPState, top uint32, hash chainhash.Hash, ok bool, err error) {
	st = s.cfg.SilentPayments.SPState()
	tip, have := v.Tip()
	if !have || st.Next == st.Start {
		return st, 0, hash, false, nil
	}
	top = min(st.Next-1, tip.Height)
	hash, err = v.HashAt(top)
	return st, top, hash, err == nil, err
}

// serveSPCheckpoints answers /sp/checkpoints: the commitment headers at
// every multiple of SPCheckpointInterval up to the index's height, and the
// header at that height.
func (s *Server) serveSPCheckpoints(w http.ResponseWriter) {
	sp := s.cfg.SilentPayments
	var body spCheckpoints
	var ok bool
	err := s.view.Read(func(v ChainReader) error {
		st, top, hash, have, err := s.spTop(v)
		if err != nil || !have {
			return err
		}
		cps, err := sp.SPCheckpoints(hash)
		if err != nil {
			return err
		}
		last, err := sp.SPHeaders(top, top)
		if err != nil {
			return err
		}
		if last[0].BlockHash != hash {
			return fmt.Errorf("silent-payment header at %d: %w", top, ErrViewChanged)
		}
		body = spCheckpoints{StartHeight: st.Start, Height: top, BlockHash: hash.String(), Header: last[0].Header.String(),
			Interval: SPCheckpointInterval, Checkpoints: make([]string, len(cps))}
		for i := range cps {
			body.Checkpoints[i] = cps[i].Header.String()
		}
		ok = true
		return nil
	})
	if err != nil {
		s.internalError(w, "sp checkpoints", err)
		return
	}
	if !ok {
		writeText(w, http.StatusNotFound, "the silent-payment index holds no block yet")
		return
	}
	out, _ := json.Marshal(body)
	w.Header().Set("Content-Type", ctJSON)
	w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(int(s.cfg.NearTipMaxAge/time.Second)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(out, '\n'))
}
