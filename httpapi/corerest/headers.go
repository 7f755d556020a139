package corerest

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"

	"github.com/btcsuite/btcd/wire/v2"
)

// headersJSONError answers /rest/headers/<hash>.json. Core's JSON form
// carries chainwork, nTx, mediantime and difficulty, which cfindexd does
// not keep, so it is refused rather than answered with a partial object.
var headersJSONError = &coreError{http.StatusNotFound, "output format not found (available: .bin, .hex)"}

// serveHeaders answers /rest/headers/<hash>.<bin|hex>?count=N: the
// 80-byte headers of the active chain from hash upward (empty for an
// unknown or stale block), .hex their hex plus "\n".
func serveHeaders(w http.ResponseWriter, req Request, chain Chain, internalError func(http.ResponseWriter, string, error)) {
	if req.err != nil {
		writeCoreError(w, req.err)
		return
	}
	hs, err := chain.HeadersFrom(req.hash, req.count)
	if err != nil {
		internalError(w, "headers", err)
		return
	}
	switch req.format {
	case formatUndef:
		writeCoreError(w, formatError)
		return
	case formatJSON:
		writeCoreError(w, headersJSONError)
		return
	}
	var buf bytes.Buffer
	buf.Grow(len(hs) * wire.MaxBlockHeaderPayload)
	for i := range hs {
		if err := hs[i].Serialize(&buf); err != nil {
			internalError(w, "headers", err)
			return
		}
	}
	writeCoreBody(w, req.format, [][]byte{buf.Bytes()}, nil)
}

// serveHashByHeight answers /rest/blockhashbyheight/<height>.<fmt>:
// the active block hash at height, .bin 32 bytes in internal order, .hex
// display order plus "\n", .json {"blockhash":"<hex>"}. Errors: 400
// "Invalid height: <sanitized raw>" (Core's ParseInt32: optional '+', no
// "+-", negative refused) and 404 "Block height out of range".
func serveHashByHeight(w http.ResponseWriter, req Request, chain Chain, internalError func(http.ResponseWriter, string, error)) {
	if req.err != nil {
		writeCoreError(w, req.err)
		return
	}
	// One read: the height is above the tip exactly when it has no hash.
	hash, found, err := chain.HashAt(req.height)
	if err != nil {
		internalError(w, "blockhashbyheight", err)
		return
	}
	if !found {
		writeCoreError(w, &coreError{http.StatusNotFound, "Block height out of range"})
		return
	}
	if req.format == formatUndef {
		writeCoreError(w, formatError)
		return
	}
	if req.format == formatHex {
		// Core writes GetHex(): display order, not the serialized bytes.
		w.Header().Set("Content-Type", ctText)
		body := hash.String() + "\n"
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(body))
		return
	}
	writeCoreBody(w, req.format, [][]byte{hash[:]}, jsonText(`{"blockhash":"`+hash.String()+`"}`))
}

// Core's URI prefixes of the chain endpoints served from the store's
// headers.
const (
	prefixHeaders           = "/rest/headers/"
	prefixBlockHashByHeight = "/rest/blockhashbyheight/"
)

// parseHeaders parses the part of a /rest/headers/ target after the
// prefix: <hash>.<ext>?count=N or the deprecated <count>/<hash>.<ext>.
func parseHeaders(part, rawQuery string) Request {
	param, f := splitFormat(part)
	req := Request{Endpoint: Headers, headers: true, format: f}
	rawCount, rawHash, ok := countAndHashParts(strings.Split(param, "/"), rawQuery)
	if !ok {
		req.err = &coreError{http.StatusBadRequest, "Invalid URI format. Expected /rest/headers/<hash>.<ext>?count=<count>"}
		return req
	}
	req.setCountAndHash(rawCount, rawHash)
	return req
}

// countAndHashParts reads the path segments of a headers-style request
// after any filter type: <count>/<hash> (the deprecated form) or <hash>
// with the count from the query (default defaultCoreCount). Any other
// number of segments is not ok.
func countAndHashParts(parts []string, rawQuery string) (rawCount, rawHash string, ok bool) {
	switch len(parts) {
	case 2:
		return parts[0], parts[1], true
	case 1:
		if rawCount, ok = queryParam(rawQuery, "count"); !ok {
			rawCount = defaultCoreCount
		}
		return rawCount, parts[0], true
	}
	return "", "", false
}

// parseHeight parses the part of a /rest/blockhashbyheight/ target
// after the prefix with Core's ParseInt32: an optional '+' (not "+-"), then
// an int32 with optional '-'; negative heights are refused.
func parseHeight(part string) Request {
	param, f := splitFormat(part)
	req := Request{Endpoint: BlockHashByHeight, format: f}
	s := param
	if len(s) >= 2 && s[0] == '+' && s[1] == '-' {
		s = "!" // invalid
	} else if strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	digits := strings.TrimPrefix(s, "-")
	valid := digits != ""
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			valid = false
		}
	}
	var n int64
	if valid {
		var err error
		n, err = strconv.ParseInt(s, 10, 32)
		valid = err == nil
	}
	if !valid || n < 0 {
		req.err = &coreError{http.StatusBadRequest, "Invalid height: " + sanitizeString(param)}
		return req
	}
	req.height = uint32(n)
	return req
}

// sanitizeString is Core's SanitizeString with SAFE_CHARS_DEFAULT: it drops
// every byte outside letters, digits and " .,;-_/:?@()".
func sanitizeString(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(" .,;-_/:?@()", c) >= 0 {
			b.WriteByte(c)
		}
	}
	return b.String()
}
