package httpapi

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/rangefile"
)

// immutableCacheControl lets browsers and CDNs keep a final range forever.
const immutableCacheControl = rangefile.ImmutableCacheControl

// bulkETag names the content of a bulk file. The block hash at end commits
// to every header up to end, and the filter header at end to every filter
// up to end, so (kind, start, end, hash, filter header) fixes the bytes
// without reading them.
func bulkETag(kind string, start, end uint32, hash, filterHeader chainhash.Hash) string {
	h := sha256.New()
	h.Write([]byte("cfindexd-bulk-v1\x00" + kind + "\x00"))
	var n [8]byte
	binary.LittleEndian.PutUint32(n[:4], start)
	binary.LittleEndian.PutUint32(n[4:], end)
	h.Write(n[:])
	h.Write(hash[:])
	h.Write(filterHeader[:])
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// setCaching writes ETag and Cache-Control: a strong ETag and a one-year
// immutable lifetime for a final range, a weak ETag and a short lifetime
// for one that a reorg may still change.
func setCaching(w http.ResponseWriter, tag string, final bool, nearTip time.Duration) string {
	if final {
		w.Header().Set("Cache-Control", immutableCacheControl)
	} else {
		w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(int(nearTip/time.Second)))
	}
	etag := etagValue(tag, final)
	w.Header().Set("ETag", etag)
	return etag
}

// etagValue is the ETag header value of tag: strong for a final range,
// weak otherwise.
func etagValue(tag string, final bool) string {
	if final {
		return `"` + tag + `"`
	}
	return `W/"` + tag + `"`
}

// notModified reports whether the request's If-None-Match matches etag,
// with the weak comparison RFC 9110 prescribes for If-None-Match.
func notModified(r *http.Request, etag string) bool {
	inm := r.Header.Values("If-None-Match")
	if len(inm) == 0 {
		return false
	}
	want := strings.TrimPrefix(etag, "W/")
	for _, line := range inm {
		for _, c := range strings.Split(line, ",") {
			c = strings.TrimSpace(c)
			if c == "*" || strings.TrimPrefix(c, "W/") == want {
				return true
			}
		}
	}
	return false
}

// isFinal reports whether a range ending at end is at least depth blocks
// below the tip.
func isFinal(end, tip, depth uint32) bool {
	return uint64(end)+uint64(depth) <= uint64(tip)
}
