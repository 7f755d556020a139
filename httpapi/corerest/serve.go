package corerest

import (
	"net/http"
	"strconv"
)

// Content types exactly as Core sends them.
const (
	ctBinary = "application/octet-stream"
	ctText   = "text/plain"
	ctJSON   = "application/json"
	// ctUnknownEndpoint is what libevent sends with Core's empty 404 for
	// a /rest/ path no handler claims.
	ctUnknownEndpoint = "text/html; charset=ISO-8859-1"
)

// Serve answers req, a request Parse accepted, from chain. A failed read
// of chain is handed to internalError with the endpoint's name, to be
// logged and answered (a 500); nothing has been written to w then.
func Serve(w http.ResponseWriter, req Request, chain Chain, internalError func(w http.ResponseWriter, endpoint string, err error)) {
	switch req.Endpoint {
	case BlockFilter:
		serveFilter(w, req, chain, internalError)
	case BlockFilterHeaders:
		serveFilterHeaders(w, req, chain, internalError)
	case Headers:
		serveHeaders(w, req, chain, internalError)
	case BlockHashByHeight:
		serveHashByHeight(w, req, chain, internalError)
	default:
		// libevent's empty 404 for a path no REST handler claims.
		w.Header().Set("Content-Type", ctUnknownEndpoint)
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusNotFound)
	}
}

// writeCoreError sends err the way Core's RESTERR does.
func writeCoreError(w http.ResponseWriter, e *coreError) {
	msg := e.msg + "\r\n"
	w.Header().Set("Content-Type", ctText)
	w.Header().Set("Content-Length", strconv.Itoa(len(msg)))
	w.WriteHeader(e.status)
	_, _ = w.Write([]byte(msg))
}

// formatError is Core's answer to a missing or unknown extension, which it
// gives only after the block lookup.
var formatError = &coreError{http.StatusNotFound, "output format not found (available: " + availableFormats + ")"}
