package corefixture

import (
	"io"
	"net/http"
	"strings"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// serveREST answers /rest/ paths: recorded replies by exact URL, then
// block and spenttxouts .bin derived for blocks recorded only over RPC.
func (s *Server) serveREST(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls["REST "+restKind(r.URL.Path)]++
	warmup, restOff := s.warmup, s.restOff
	s.mu.Unlock()
	if restOff || s.opts.Btcd {
		w.Header().Set("Content-Type", "text/html; charset=ISO-8859-1")
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if warmup {
		restErr(w, http.StatusServiceUnavailable, "Service temporarily unavailable: Loading block index…")
		return
	}
	url := r.URL.Path
	if r.URL.RawQuery != "" {
		url += "?" + r.URL.RawQuery
	}
	if hash, ok := blockPath(r.URL.Path); ok {
		if b, known := s.fx.byHash[hash]; known && s.opts.PrunedBelow > 0 && b.Height < s.opts.PrunedBelow {
			restErr(w, http.StatusNotFound, hash.String()+" not available (pruned data)")
			return
		}
	}
	if rep, ok := s.fx.rest[url]; ok {
		if rep.contentType != "" {
			w.Header().Set("Content-Type", rep.contentType)
		}
		w.WriteHeader(rep.status)
		_, _ = w.Write(rep.body)
		return
	}
	if hash, ok := blockPath(r.URL.Path); ok {
		b, known := s.fx.byHash[hash]
		var body []byte
		switch {
		case known && strings.HasPrefix(r.URL.Path, "/rest/block/"):
			body = b.Raw
		case known:
			body = s.fx.spentBin[hash]
		}
		if body == nil {
			restErr(w, http.StatusNotFound, hash.String()+" not found")
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=ISO-8859-1")
	w.WriteHeader(http.StatusNotFound)
}

// blockPath parses /rest/block/<hash>.bin and /rest/spenttxouts/<hash>.bin.
func blockPath(path string) (chainhash.Hash, bool) {
	var rest string
	switch {
	case strings.HasPrefix(path, "/rest/block/"):
		rest = path[len("/rest/block/"):]
	case strings.HasPrefix(path, "/rest/spenttxouts/"):
		rest = path[len("/rest/spenttxouts/"):]
	default:
		return chainhash.Hash{}, false
	}
	hexHash, ok := strings.CutSuffix(rest, ".bin")
	if !ok || len(hexHash) != 64 {
		return chainhash.Hash{}, false
	}
	h, err := chainhash.NewHashFromStr(hexHash)
	if err != nil {
		return chainhash.Hash{}, false
	}
	return *h, true
}

func restKind(path string) string {
	p := strings.TrimPrefix(path, "/rest/")
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return p
}

// restErr writes an error like Core's RESTERR: text/plain, "\r\n"-terminated.
func restErr(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\r\n")
}
