package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/cfindexd/cfindexd/rangefile"
)

// The published layout (package rangefile, docs/deployment.md), served
// from the store so that a replica or a block-dn client can read this
// server as it reads a bucket: /headers/<start>, /filter-headers/<start>,
// /filters/<start> (final ranges only, the bytes of the matching /bulk
// files, immutable), /headers/import/latest and
// /filter-headers/import/latest (the neutrino import files of heights 0 to
// the end of the newest final range), /manifest.json and /latest (as the
// publisher writes them; the mutable ones with max-age 60). All are bulk
// answers: a bulk slot, the minimum rate, CORS.

// parseLayout parses a layout path; false if p is none.
func parseLayout(p string) (target, bool) {
	switch p {
	case "/" + rangefile.ManifestName:
		return target{route: routeManifest}, true
	case "/" + rangefile.LatestName:
		return target{route: routeLatest}, true
	case "/" + rangefile.HeadersImportName:
		return target{route: routeRangeImport}, true
	case "/" + rangefile.FilterHeadersImportName:
		return target{route: routeRangeImport, layoutFilters: true}, true
	}
	dir, name, ok := cutLast(p, '/')
	if !ok {
		return target{}, false
	}
	var r route
	switch dir {
	case "/headers":
		r = routeRangeHeaders
	case "/filter-headers":
		r = routeRangeFilterHeaders
	case "/filters":
		r = routeRangeFilters
	default:
		return target{}, false
	}
	start, ok := parseHeight(name)
	if !ok {
		return target{route: routeBulkBad, badReason: "start height must be a decimal number without leading zeros"}, true
	}
	if start%BulkInterval != 0 {
		return target{route: routeBulkBad, badReason: "start height must be a multiple of " + strconv.Itoa(BulkInterval)}, true
	}
	if uint64(start)+BulkInterval-1 > 0xffffffff {
		return target{route: routeBulkBad, badReason: "range must end at a height below 2^32"}, true
	}
	return target{route: r, start: start, end: start + BulkInterval - 1, ranged: true}, true
}

// isLayoutFile reports whether r is a layout range or import file, served
// as a bulk file.
func (r route) isLayoutFile() bool {
	switch r {
	case routeRangeHeaders, routeRangeFilterHeaders, routeRangeFilters, routeRangeImport:
		return true
	}
	return false
}

// layoutRange resolves a layout file against the tip: only final ranges,
// and the import files up to the end of the newest final range.
func layoutRange(t target, tip Tip, have bool, depth uint32) (start, end uint32, final bool, refusal string) {
	if !have {
		return 0, 0, false, "the index is empty"
	}
	if t.route == routeRangeImport {
		n := rangefile.FinalCount(tip.Height, depth)
		if n == 0 {
			return 0, 0, false, "no range is final yet"
		}
		return 0, rangefile.End((n - 1) * rangefile.Size), false, ""
	}
	if !rangefile.Final(t.start, tip.Height, depth) {
		return 0, 0, false, "range " + strconv.FormatUint(uint64(t.start), 10) + " is not final: its end is not " +
			strconv.FormatUint(uint64(depth), 10) + " blocks below the indexed tip " + strconv.FormatUint(uint64(tip.Height), 10)
	}
	return t.start, t.end, true, ""
}

// serveLayoutDocument answers /manifest.json or /latest from the catalog.
func (s *Server) serveLayoutDocument(w http.ResponseWriter, t target) {
	if s.cfg.NetName == "" {
		writeText(w, http.StatusNotFound, "the layout's manifest is not enabled")
		return
	}
	tip, have := s.view.Tip()
	if !have {
		writeText(w, http.StatusNotFound, "the index is empty")
		return
	}
	// One request computes; others meanwhile are told to come back
	// rather than each holding a bulk slot in the queue.
	manifest, latest, err := s.catalog.Documents(s.rangeRead, s.tweakIndex(), tip.Height, s.cfg.ReorgSafetyDepth, false)
	if errors.Is(err, rangefile.ErrNoFinalRange) {
		writeText(w, http.StatusNotFound, "no range is final yet")
		return
	}
	if errors.Is(err, rangefile.ErrWarming) {
		select {
		case s.warmKick <- struct{}{}:
		default:
		}
		w.Header().Set("Retry-After", "5")
		writeText(w, http.StatusServiceUnavailable, "the manifest's catalog is warming ("+err.Error()+"); retry")
		return
	}
	if errors.Is(err, rangefile.ErrBusy) {
		w.Header().Set("Retry-After", "5")
		writeText(w, http.StatusServiceUnavailable, "the manifest is being computed; retry")
		return
	}
	if err != nil {
		s.internalError(w, t.route.String(), err)
		return
	}
	body := manifest
	if t.route == routeLatest {
		body = latest
	}
	w.Header().Set("Content-Type", ctJSON)
	w.Header().Set("Cache-Control", rangefile.MutableCacheControl)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// rangeRead is rangefile's ReadFunc over the view.
func (s *Server) rangeRead(fn func(rangefile.Reader) error) error {
	return s.view.Read(func(v ChainReader) error { return fn(rangeReader{v}) })
}

// tweakIndex returns the silent-payment index as rangefile reads it; nil
// when it is off.
func (s *Server) tweakIndex() rangefile.TweakIndex { return RangeTweaks(s.cfg.SilentPayments) }

// rangeReader adapts a ChainReader to rangefile.Reader.
type rangeReader struct{ ChainReader }

// Filters implements rangefile.Reader.
func (r rangeReader) Filters(start, end uint32) ([][]byte, error) {
	recs, err := r.FiltersByHeight(start, end)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(recs))
	for i := range recs {
		out[i] = recs[i].Filter
	}
	return out, nil
}

// spTweakIndex adapts an SPIndex to rangefile.TweakIndex.
type spTweakIndex struct{ sp SPIndex }

// Covered implements rangefile.TweakIndex.
func (x spTweakIndex) Covered() (first, next uint32) {
	st := x.sp.SPState()
	return st.Start, st.Next
}

// BlockTweaks implements rangefile.TweakIndex.
func (x spTweakIndex) BlockTweaks(start, end uint32) ([]rangefile.BlockTweaks, error) {
	bs, err := x.sp.SPTweaks(start, end)
	if err != nil {
		return nil, err
	}
	out := make([]rangefile.BlockTweaks, len(bs))
	for i := range bs {
		out[i] = rangefile.BlockTweaks{Hash: bs[i].BlockHash, Tweaks: bs[i].Tweaks}
	}
	return out, nil
}

// isLayoutPath reports whether p may be a layout path (a cheap test
// before parseLayout).
func isLayoutPath(p string) bool {
	return strings.HasPrefix(p, "/headers/") || strings.HasPrefix(p, "/filter-headers/") ||
		strings.HasPrefix(p, "/filters/") || p == "/manifest.json" || p == "/latest"
}

// RangeReader returns v as rangefile reads a chain: the adapter the
// layout routes use, for a publisher that must read the same bytes.
func RangeReader(v ChainReader) rangefile.Reader { return rangeReader{v} }

// RangeTweaks returns sp as rangefile reads the silent-payment index; nil
// for a nil sp.
func RangeTweaks(sp SPIndex) rangefile.TweakIndex {
	if sp == nil {
		return nil
	}
	return spTweakIndex{sp}
}
