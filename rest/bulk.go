package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/store"
)

// Record sizes of the flat bulk files.
const (
	blockHeaderSize  = 80
	filterHeaderSize = chainhash.HashSize
	// filtersChunk is how many filters one store read fetches while a
	// filters file streams; it bounds the memory of one download: about
	// twice 64 mainnet-sized (25 KB) filters, 3.2 MB, so the default eight
	// downloads hold some 26 MB.
	filtersChunk = 64
)

// bulkFile describes one bulk download: its ETag kind, the fixed prefix
// (neutrino metadata) and size of its records (0: variable), and how to
// append the records of heights a..b, given the hash of the block before a
// (zero at a == start) so chunks can be checked to link.
type bulkFile struct {
	kind     string
	prefix   []byte
	itemSize int
	chunk    uint32
	read     func(v ChainView, a, b uint32, prev chainhash.Hash, dst []byte) ([]byte, chainhash.Hash, error)
}

var (
	headersFile  = bulkFile{kind: "headers", itemSize: blockHeaderSize, chunk: store.MaxRange, read: readHeaders}
	fheadersFile = bulkFile{kind: "filterheaders", itemSize: filterHeaderSize, chunk: store.MaxRange, read: readFilterHeaders}
	filtersFile  = bulkFile{kind: "filters", chunk: filtersChunk, read: readFilters}
)

func readHeaders(v ChainView, a, b uint32, prev chainhash.Hash, dst []byte) ([]byte, chainhash.Hash, error) {
	hs, err := v.Headers(a, b)
	if err != nil {
		return dst, prev, err
	}
	if prev != (chainhash.Hash{}) && len(hs) > 0 && hs[0].PrevBlock != prev {
		return dst, prev, fmt.Errorf("headers at %d: %w", a, ErrViewChanged)
	}
	buf := bytes.NewBuffer(dst)
	for i := range hs {
		if err := hs[i].Serialize(buf); err != nil {
			return dst, prev, fmt.Errorf("serialize header %d: %w", a+uint32(i), err)
		}
	}
	last := prev
	if len(hs) > 0 {
		last = hs[len(hs)-1].BlockHash()
	}
	return buf.Bytes(), last, nil
}

func readFilterHeaders(v ChainView, a, b uint32, prev chainhash.Hash, dst []byte) ([]byte, chainhash.Hash, error) {
	fhs, err := v.FilterHeadersByHeight(a, b)
	if err != nil {
		return dst, prev, err
	}
	for _, fh := range fhs {
		dst = append(dst, fh[:]...)
	}
	return dst, prev, nil
}

func readFilters(v ChainView, a, b uint32, prev chainhash.Hash, dst []byte) ([]byte, chainhash.Hash, error) {
	recs, err := v.FiltersByHeight(a, b)
	if err != nil {
		return dst, prev, err
	}
	if prev != (chainhash.Hash{}) && len(recs) > 0 && recs[0].Header.PrevBlock != prev {
		return dst, prev, fmt.Errorf("filters at %d: %w", a, ErrViewChanged)
	}
	for _, r := range recs {
		dst = appendCompactSize(dst, uint64(len(r.Filter)))
		dst = append(dst, r.Filter...)
	}
	last := prev
	if len(recs) > 0 {
		last = recs[len(recs)-1].Hash
	}
	return dst, last, nil
}

// bulkRange resolves the heights of a bulk target against the tip, or
// answers the request itself and returns false.
func (s *Server) bulkRange(w http.ResponseWriter, t target) (start, end uint32, final bool, ok bool) {
	tip, have := s.view.Tip()
	if !have {
		writeText(w, http.StatusNotFound, "the index is empty")
		return 0, 0, false, false
	}
	start, end = t.start, t.end
	switch {
	case t.route == routeBulkFilters:
		end = uint32(min(uint64(start)+BulkInterval-1, uint64(tip.Height)))
		if start > tip.Height {
			writeText(w, http.StatusNotFound, "range starts above the indexed tip "+strconv.FormatUint(uint64(tip.Height), 10))
			return 0, 0, false, false
		}
		// Only a full file is final; a partial one grows with the tip.
		return start, end, end == start+BulkInterval-1 && isFinal(end, tip.Height, s.cfg.ReorgSafetyDepth), true
	case !t.ranged:
		start, end = 0, tip.Height
	}
	if end > tip.Height {
		writeText(w, http.StatusNotFound, "range ends above the indexed tip "+strconv.FormatUint(uint64(tip.Height), 10))
		return 0, 0, false, false
	}
	return start, end, isFinal(end, tip.Height, s.cfg.ReorgSafetyDepth), true
}

// serveBulk streams the records of heights start..end of f. The ETag comes
// from the block hash and filter header at end, read first; the hash at end
// is read again after the last chunk, and a download that raced a reorg is
// cut off (the client sees a truncated body) rather than completed with
// bytes of two chains.
func (s *Server) serveBulk(w http.ResponseWriter, r *http.Request, f bulkFile, start, end uint32, final bool) {
	endHash, err := s.view.HashAt(end)
	if err != nil {
		s.viewError(w, "bulk "+f.kind, err)
		return
	}
	endFH, err := s.view.FilterHeadersByHeight(end, end)
	if err != nil || len(endFH) != 1 {
		s.viewError(w, "bulk "+f.kind, err)
		return
	}
	etag := setCaching(w, bulkETag(f.kind, start, end, endHash, endFH[0]), final, s.cfg.NearTipMaxAge)
	w.Header().Set("Content-Type", ctBinary)
	if notModified(r, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if f.itemSize > 0 {
		n := int64(len(f.prefix)) + int64(f.itemSize)*(int64(end)-int64(start)+1)
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	body := newMinRateWriter(w, s.cfg.BulkMinRate, s.cfg.BulkMinRateWindow, time.Now().Add(s.cfg.BulkWriteTimeout), time.Now)
	wrote := func(err error) bool {
		if errors.Is(err, errTooSlow) {
			s.metrics.httpBulkSlowCut()
			s.log.Debug().Str("client", r.RemoteAddr).Str("file", f.kind).Int("min_rate", s.cfg.BulkMinRate).
				Msg("bulk download cut off: the client reads slower than the minimum rate")
		}
		return err == nil // otherwise the client went away or was too slow
	}

	var (
		buf  []byte
		prev chainhash.Hash
	)
	for a := uint64(start); a <= uint64(end); a += uint64(f.chunk) {
		b := min(a+uint64(f.chunk)-1, uint64(end))
		buf, prev, err = f.read(s.view, uint32(a), uint32(b), prev, buf[:0])
		if err != nil {
			if a == uint64(start) {
				s.viewError(w, "bulk "+f.kind, err)
				return
			}
			s.log.Info().Err(err).Str("file", f.kind).Msg("bulk download cut off")
			panic(http.ErrAbortHandler)
		}
		if a == uint64(start) {
			w.WriteHeader(http.StatusOK)
			if _, err := body.Write(f.prefix); !wrote(err) {
				return
			}
		}
		if _, err := body.Write(buf); !wrote(err) {
			return
		}
	}
	if again, err := s.view.HashAt(end); err != nil || again != endHash {
		s.log.Info().Uint32("end", end).Str("file", f.kind).Msg("chain changed during bulk download; cut off")
		panic(http.ErrAbortHandler)
	}
}

// viewError answers a failed store read: 503 for a read that raced a reorg
// or the tip going down (retry), 500 otherwise.
func (s *Server) viewError(w http.ResponseWriter, what string, err error) {
	if err == nil || errors.Is(err, store.ErrNotFound) || errors.Is(err, ErrViewChanged) {
		w.Header().Set("Retry-After", "1")
		writeText(w, http.StatusServiceUnavailable, "the chain changed during the request; retry")
		return
	}
	s.internalError(w, what, err)
}

// bulkIndex is the body of /bulk/index.json.
type bulkIndex struct {
	TipHeight        uint32 `json:"tip_height"`
	TipHash          string `json:"tip_hash"`
	TipFilterHeader  string `json:"tip_filter_header"`
	FinalHeight      int64  `json:"final_height"` // -1 while no height is final
	Interval         int    `json:"interval"`
	ReorgSafetyDepth uint32 `json:"reorg_safety_depth"`
	Network          uint32 `json:"network_magic"`
}

// serveBulkIndex tells a client what it can download: the tip and the
// highest final height.
func (s *Server) serveBulkIndex(w http.ResponseWriter) {
	tip, ok := s.view.Tip()
	if !ok {
		writeText(w, http.StatusNotFound, "the index is empty")
		return
	}
	idx := bulkIndex{
		TipHeight:        tip.Height,
		TipHash:          tip.Hash.String(),
		TipFilterHeader:  tip.FilterHeader.String(),
		FinalHeight:      int64(tip.Height) - int64(s.cfg.ReorgSafetyDepth),
		Interval:         BulkInterval,
		ReorgSafetyDepth: s.cfg.ReorgSafetyDepth,
		Network:          uint32(s.cfg.Net),
	}
	if idx.FinalHeight < 0 {
		idx.FinalHeight = -1
	}
	body, _ := json.Marshal(idx)
	w.Header().Set("Content-Type", ctJSON)
	w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(int(s.cfg.NearTipMaxAge/time.Second)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, '\n'))
}

// writeText sends a short text/plain answer.
func writeText(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Del("ETag")
	w.Header().Del("Cache-Control")
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg + "\n"))
}
