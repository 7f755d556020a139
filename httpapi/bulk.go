package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/rangefile"
)

// The bulk files are flat binary files by height, for the basic filter
// type and the active chain only.
//
// headers and filterheaders ranges (<start>-<end>.bin, inclusive) start at
// a multiple of BulkInterval and hold at most BulkInterval heights, in
// canonical decimals, ending at most at the tip. headers is the 80-byte
// wire serialization of each block header in height order; filterheaders
// the 32-byte filter header of each height in internal byte order (as in
// cfheaders), where header(h) = dSHA256(dSHA256(filter(h)) || header(h-1))
// and header(-1) = 0.
//
// filters/<start>.bin (start a multiple of BulkInterval) holds the filters
// of heights start .. min(start+BulkInterval-1, tip), each a CompactSize
// length then the BIP-158 filter, in height order with nothing else. To
// verify one, take the filter header at start-1 (zero for start 0), fold
// the filters through the formula above and compare each result with the
// filterheaders file.
//
// index.json gives tip_height, tip_hash, tip_filter_header, final_height
// (the highest height at least ReorgSafetyDepth deep, -1 if none),
// interval, reorg_safety_depth and network_magic.
//
// A range whose last height is at least ReorgSafetyDepth below the tip is
// final: a strong ETag and an immutable one-year Cache-Control. Other
// ranges, filters files not yet full and the whole-chain neutrino files
// get a weak ETag and max-age NearTipMaxAge (cache.go). The ETag commits to
// the range's end block hash and filter header, so If-None-Match is
// answered 304 without reading the range. Bulk responses allow any origin
// (CORS): the data is public.

// Record sizes of the flat bulk files.
const (
	blockHeaderSize  = rangefile.BlockHeaderSize
	filterHeaderSize = rangefile.FilterHeaderSize
	// filtersChunk is how many filters one store read fetches while a
	// filters file streams; it bounds the memory of one download to twice
	// that many filters (MemoryBound).
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
	read     func(v ChainReader, a, b uint32, prev chainhash.Hash, dst []byte) ([]byte, chainhash.Hash, error)
	// endCommit returns what the ETag commits to besides the end block's
	// hash; nil: the filter header at end.
	endCommit func(v ChainReader, end uint32) (chainhash.Hash, error)
}

var (
	headersFile  = bulkFile{kind: "headers", itemSize: blockHeaderSize, chunk: MaxRange, read: readHeaders}
	fheadersFile = bulkFile{kind: "filterheaders", itemSize: filterHeaderSize, chunk: MaxRange, read: readFilterHeaders}
	filtersFile  = bulkFile{kind: "filters", chunk: filtersChunk, read: readFilters}
)

func readHeaders(v ChainReader, a, b uint32, prev chainhash.Hash, dst []byte) ([]byte, chainhash.Hash, error) {
	hs, err := v.Headers(a, b)
	if err != nil {
		return dst, prev, err
	}
	if len(hs) != int(b-a)+1 {
		return dst, prev, fmt.Errorf("headers %d..%d: %d of them: %w", a, b, len(hs), ErrNotFound)
	}
	if prev != (chainhash.Hash{}) && len(hs) > 0 && hs[0].PrevBlock != prev {
		return dst, prev, fmt.Errorf("headers at %d: %w", a, ErrViewChanged)
	}
	dst, err = rangefile.AppendHeaders(dst, hs)
	if err != nil {
		return dst, prev, fmt.Errorf("headers at %d: %w", a, err)
	}
	last := prev
	if len(hs) > 0 {
		last = hs[len(hs)-1].BlockHash()
	}
	return dst, last, nil
}

func readFilterHeaders(v ChainReader, a, b uint32, prev chainhash.Hash, dst []byte) ([]byte, chainhash.Hash, error) {
	fhs, err := v.FilterHeadersByHeight(a, b)
	if err != nil {
		return dst, prev, err
	}
	return rangefile.AppendFilterHeaders(dst, fhs), prev, nil
}

func readFilters(v ChainReader, a, b uint32, prev chainhash.Hash, dst []byte) ([]byte, chainhash.Hash, error) {
	recs, err := v.FiltersByHeight(a, b)
	if err != nil {
		return dst, prev, err
	}
	if prev != (chainhash.Hash{}) && len(recs) > 0 && recs[0].Header.PrevBlock != prev {
		return dst, prev, fmt.Errorf("filters at %d: %w", a, ErrViewChanged)
	}
	for _, r := range recs {
		dst = rangefile.AppendFilter(dst, r.Filter)
	}
	last := prev
	if len(recs) > 0 {
		last = recs[len(recs)-1].Hash
	}
	return dst, last, nil
}

// endFilterHeader is the filter header at end, what a bulk file's ETag
// commits to besides the end block's hash.
func endFilterHeader(v ChainReader, end uint32) (chainhash.Hash, error) {
	fhs, err := v.FilterHeadersByHeight(end, end)
	if err != nil {
		return chainhash.Hash{}, err
	}
	return fhs[0], nil
}

// bulkFileOf returns the file a bulk target names; start is the first
// height of its range.
func (s *Server) bulkFileOf(t target, start uint32) bulkFile {
	switch t.route {
	case routeSPTweaks, routeSPFiles:
		return s.spFile(t, start)
	case routeBulkHeaders, routeRangeHeaders:
		return headersFile
	case routeBulkFilterHeaders, routeRangeFilterHeaders:
		return fheadersFile
	case routeRangeImport:
		return s.neutrinoFile(t.layoutFilters, start)
	case routeNeutrinoBlockHeaders:
		return s.neutrinoFile(false, start)
	case routeNeutrinoFilterHeaders:
		return s.neutrinoFile(true, start)
	}
	return filtersFile
}

// bulkRange resolves the heights of a bulk target against the tip. A
// non-empty refusal is the text of a 404 instead.
func bulkRange(t target, tip Tip, have bool, depth uint32) (start, end uint32, final bool, refusal string) {
	if !have {
		return 0, 0, false, "the index is empty"
	}
	start, end = t.start, t.end
	switch {
	case t.route == routeBulkFilters:
		if start > tip.Height {
			return 0, 0, false, "range starts above the indexed tip " + strconv.FormatUint(uint64(tip.Height), 10)
		}
		end = uint32(min(uint64(start)+BulkInterval-1, uint64(tip.Height)))
		// Only a full file is final; a partial one grows with the tip.
		return start, end, end == start+BulkInterval-1 && isFinal(end, tip.Height, depth), ""
	case !t.ranged:
		start, end = 0, tip.Height
	}
	if end > tip.Height {
		return 0, 0, false, "range ends above the indexed tip " + strconv.FormatUint(uint64(tip.Height), 10)
	}
	return start, end, isFinal(end, tip.Height, depth), ""
}

// bulkBegin is what one snapshot decides about a bulk download before a
// byte is sent: the range against that snapshot's tip, the ETag, and the
// records of the first chunk.
type bulkBegin struct {
	refusal    string
	start, end uint32
	etag       string
	final      bool
	endHash    chainhash.Hash
	first      []byte
	firstEnd   uint32
	prev       chainhash.Hash
}

// serveBulkFile answers a bulk target: range, ETag and first chunk come
// from one snapshot, so a request that names a range of the chain is never
// refused because the tip moved between those reads. The snapshot is
// closed before anything is written, and each further chunk is read from a
// snapshot of its own (a slow client must not hold one open); each chunk
// must link to the one before it, the hash at the range's end is read again
// after the last chunk, and a download that raced a reorg is cut off (the client sees a truncated body) rather than
// completed with bytes of two chains.
func (s *Server) serveBulkFile(w *minRateWriter, r *http.Request, t target) {
	var (
		b bulkBegin
		f bulkFile
	)
	sendsBody := r.Method != http.MethodHead
	err := s.view.Read(func(v ChainReader) error {
		tip, have := v.Tip()
		switch {
		case t.route == routeSPTweaks || t.route == routeSPFiles:
			b.start, b.end, b.final, b.refusal = s.spRange(t, tip, have)
		case t.route.isLayoutFile():
			b.start, b.end, b.final, b.refusal = layoutRange(t, tip, have, s.cfg.ReorgSafetyDepth)
		default:
			b.start, b.end, b.final, b.refusal = bulkRange(t, tip, have, s.cfg.ReorgSafetyDepth)
		}
		if b.refusal != "" {
			return nil
		}
		f = s.bulkFileOf(t, b.start)
		var err error
		if b.endHash, err = v.HashAt(b.end); err != nil {
			return err
		}
		endCommit := endFilterHeader
		if f.endCommit != nil {
			endCommit = f.endCommit
		}
		commit, err := endCommit(v, b.end)
		if err != nil {
			return err
		}
		b.etag = bulkETag(f.kind, b.start, b.end, b.endHash, commit)
		if !sendsBody || notModified(r, etagValue(b.etag, b.final)) {
			return nil
		}
		b.firstEnd = uint32(min(uint64(b.start)+uint64(f.chunk)-1, uint64(b.end)))
		b.first, b.prev, err = f.read(v, b.start, b.firstEnd, chainhash.Hash{}, nil)
		return err
	})
	if err != nil {
		s.internalError(w, "bulk "+f.kind, err)
		return
	}
	if b.refusal != "" {
		writeText(w, http.StatusNotFound, b.refusal)
		return
	}
	etag := setCaching(w, b.etag, b.final, s.cfg.NearTipMaxAge)
	if t.route == routeRangeImport {
		w.Header().Set("Cache-Control", rangefile.MutableCacheControl)
	}
	w.Header().Set("Content-Type", ctBinary)
	if notModified(r, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if f.itemSize > 0 {
		n := int64(len(f.prefix)) + int64(f.itemSize)*(int64(b.end)-int64(b.start)+1)
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	}
	if !sendsBody {
		w.WriteHeader(http.StatusOK)
		return
	}
	body := w
	wrote := func(err error) bool {
		if errors.Is(err, errTooSlow) {
			s.metrics.HTTPSlowCut("bulk")
			s.log.Debug().Str("client", r.RemoteAddr).Str("file", f.kind).Int("min_rate", s.cfg.BulkMinRate).
				Msg("bulk download cut off: the client reads slower than the minimum rate")
		}
		return err == nil // otherwise the client went away or was too slow
	}
	w.WriteHeader(http.StatusOK)
	if _, err := body.Write(f.prefix); !wrote(err) {
		return
	}
	if _, err := body.Write(b.first); !wrote(err) {
		return
	}
	buf, prev := b.first, b.prev
	for a := uint64(b.firstEnd) + 1; a <= uint64(b.end); a += uint64(f.chunk) {
		end := min(a+uint64(f.chunk)-1, uint64(b.end))
		buf, prev, err = f.read(s.view, uint32(a), uint32(end), prev, buf[:0])
		if err != nil {
			s.log.Info().Err(err).Str("file", f.kind).Msg("bulk download cut off")
			panic(http.ErrAbortHandler)
		}
		if _, err := body.Write(buf); !wrote(err) {
			return
		}
	}
	if b.firstEnd == b.end {
		return // one chunk, one snapshot: consistent by construction
	}
	if again, err := s.view.HashAt(b.end); err != nil || again != b.endHash {
		s.log.Info().Uint32("end", b.end).Str("file", f.kind).Msg("chain changed during bulk download; cut off")
		panic(http.ErrAbortHandler)
	}
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

// Content types of the bulk files and the JSON answers.
const (
	ctBinary = "application/octet-stream"
	ctJSON   = "application/json"
)

// writeText sends a short text/plain answer.
func writeText(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Del("ETag")
	w.Header().Del("Cache-Control")
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg + "\n"))
}
