package corerest

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// Limits and defaults of Bitcoin Core's REST interface (src/rest.cpp).
const (
	// MaxHeadersResults is Core's MAX_REST_HEADERS_RESULTS: the largest
	// count /rest/blockfilterheaders and /rest/headers accept.
	MaxHeadersResults = 2000
	// defaultCoreCount is the count when the query has none.
	defaultCoreCount = "5"
	// basicFilterType is BlockFilterType::BASIC, the first byte of a
	// serialized BlockFilter.
	basicFilterType = 0
	basicFilterName = "basic"
)

// Core's URI prefixes of the filter endpoints. Core matches them as raw
// prefixes of the undecoded request target.
const (
	prefixBlockFilter        = "/rest/blockfilter/"
	prefixBlockFilterHeaders = "/rest/blockfilterheaders/"
)

// restFormat is Core's RESTResponseFormat.
type restFormat int

const (
	formatUndef restFormat = iota
	formatBin
	formatHex
	formatJSON
)

// availableFormats is Core's AvailableDataFormatsString().
const availableFormats = ".bin, .hex, .json"

// coreError is an error answer in Core's form: status and a message that is
// sent as text/plain followed by CRLF.
type coreError struct {
	status int
	msg    string
}

// Endpoint names the /rest/ endpoint of a request.
type Endpoint uint8

// The endpoints Parse tells apart.
const (
	// Unknown is a /rest/ path no endpoint claims, answered with
	// libevent's empty 404.
	Unknown Endpoint = iota
	// BlockFilter is /rest/blockfilter/basic/<hash>.
	BlockFilter
	// BlockFilterHeaders is /rest/blockfilterheaders/basic/<hash>.
	BlockFilterHeaders
	// Headers is /rest/headers/<hash>.
	Headers
	// BlockHashByHeight is /rest/blockhashbyheight/<height>.
	BlockHashByHeight
)

// Request is a parsed /rest/ request target; Parse makes one and Serve
// answers it. If err is set it is the answer; otherwise the parameters are
// valid and the handler looks the block up, then rejects formatUndef, in
// Core's order.
//
// Errors are text/plain, the message followed by CRLF, checked in that
// order: wrong number of path parts (400 "Invalid URI format. ..."), bad
// count (400 "Header count is invalid or out of acceptable range (1-2000):
// <raw>"), bad hash (400 "Invalid hash: <raw>"; anything but exactly 64 hex
// digits, which includes an unknown extension such as ".xml" since Core
// only strips .bin/.hex/.json), filter type other than basic (400 "Unknown
// filtertype <name>"), unknown block (404 "<hash> not found"), and only
// then a missing extension (404 "output format not found (available:
// .bin, .hex, .json)"). Counts are strict decimal (no sign, no spaces),
// 1..2000, 5 when absent.
type Request struct {
	// Endpoint is the endpoint the path names.
	Endpoint Endpoint

	headers bool // a list request with a count
	hash    chainhash.Hash
	hashStr string
	count   int
	height  uint32 // /rest/blockhashbyheight
	format  restFormat
	err     *coreError
}

// splitFormat is Core's ParseDataFormat: it strips a known .bin/.hex/.json
// suffix from param and returns the format; with no known suffix param is
// returned unchanged with formatUndef.
func splitFormat(param string) (string, restFormat) {
	dot := strings.LastIndexByte(param, '.')
	if dot < 0 {
		return param, formatUndef
	}
	switch param[dot+1:] {
	case "bin":
		return param[:dot], formatBin
	case "hex":
		return param[:dot], formatHex
	case "json":
		return param[:dot], formatJSON
	}
	return param, formatUndef
}

// parseHashStr accepts exactly 64 hex digits in Core's display order (the
// reverse of the internal byte order), either case.
func parseHashStr(s string) (chainhash.Hash, bool) {
	var h chainhash.Hash
	if len(s) != 2*chainhash.HashSize {
		return h, false
	}
	var b [chainhash.HashSize]byte
	if _, err := hex.Decode(b[:], []byte(s)); err != nil {
		return h, false
	}
	for i := range b {
		h[i] = b[len(b)-1-i]
	}
	return h, true
}

// parseCoreCount is Core's ToIntegral<size_t> followed by the 1..2000 range
// check: only ASCII digits (leading zeros allowed), no sign, no spaces,
// no overflow.
func parseCoreCount(raw string) (int, bool) {
	if raw == "" {
		return 0, false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(raw, 10, 64)
	if err != nil || n < 1 || n > MaxHeadersResults {
		return 0, false
	}
	return int(n), true
}

// Parse parses an escaped request path and its raw query; ok is false
// when the path is not under /rest/. It never fails otherwise: malformed
// parameters are carried in the Request for Serve to answer as Core does.
// It is pure, so a fuzz target can drive it.
func Parse(path, rawQuery string) (req Request, ok bool) {
	switch {
	case strings.HasPrefix(path, prefixBlockFilter):
		return parseFilter(path[len(prefixBlockFilter):]), true
	case strings.HasPrefix(path, prefixBlockFilterHeaders):
		return parseFilterHeaders(path[len(prefixBlockFilterHeaders):], rawQuery), true
	case strings.HasPrefix(path, prefixHeaders):
		return parseHeaders(path[len(prefixHeaders):], rawQuery), true
	case strings.HasPrefix(path, prefixBlockHashByHeight):
		return parseHeight(path[len(prefixBlockHashByHeight):]), true
	case strings.HasPrefix(path, "/rest/"):
		return Request{Endpoint: Unknown}, true
	}
	return Request{}, false
}

// parseFilter parses the part of a /rest/blockfilter/ target after the
// prefix (escaped path, no query).
func parseFilter(part string) Request {
	param, f := splitFormat(part)
	req := Request{Endpoint: BlockFilter, format: f}
	parts := strings.Split(param, "/")
	if len(parts) != 2 {
		req.err = &coreError{http.StatusBadRequest, "Invalid URI format. Expected /rest/blockfilter/<filtertype>/<blockhash>"}
		return req
	}
	h, ok := parseHashStr(parts[1])
	if !ok {
		req.err = &coreError{http.StatusBadRequest, "Invalid hash: " + parts[1]}
		return req
	}
	if parts[0] != basicFilterName {
		req.err = &coreError{http.StatusBadRequest, "Unknown filtertype " + parts[0]}
		return req
	}
	req.hash, req.hashStr = h, parts[1]
	return req
}

// parseFilterHeaders parses the part of a /rest/blockfilterheaders/
// target after the prefix (escaped path) and its raw query. Both the
// current form <type>/<hash>.<ext>?count=N and the deprecated
// <type>/<count>/<hash>.<ext> are accepted.
func parseFilterHeaders(part, rawQuery string) Request {
	param, f := splitFormat(part)
	req := Request{Endpoint: BlockFilterHeaders, headers: true, format: f}
	parts := strings.Split(param, "/")
	rawCount, rawHash, ok := countAndHashParts(parts[1:], rawQuery)
	if !ok {
		req.err = &coreError{http.StatusBadRequest, "Invalid URI format. Expected /rest/blockfilterheaders/<filtertype>/<blockhash>.<ext>?count=<count>"}
		return req
	}
	if !req.setCountAndHash(rawCount, rawHash) {
		return req
	}
	if parts[0] != basicFilterName {
		req.err = &coreError{http.StatusBadRequest, "Unknown filtertype " + parts[0]}
	}
	return req
}

// setCountAndHash parses the count and hash of a headers-style request in
// Core's order (count first, then hash), recording Core's error for the
// first that is bad. It reports whether both were good.
func (req *Request) setCountAndHash(rawCount, rawHash string) bool {
	n, ok := parseCoreCount(rawCount)
	if !ok {
		req.err = &coreError{http.StatusBadRequest, "Header count is invalid or out of acceptable range (1-" + strconv.Itoa(MaxHeadersResults) + "): " + rawCount}
		return false
	}
	h, ok := parseHashStr(rawHash)
	if !ok {
		req.err = &coreError{http.StatusBadRequest, "Invalid hash: " + rawHash}
		return false
	}
	req.hash, req.hashStr, req.count = h, rawHash, n
	return true
}
