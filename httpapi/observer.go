package httpapi

import (
	"net/http"
	"time"
)

// ErrorKind is the kind the server reports through Observer.Error: a
// request that failed on the server's side (answered 500).
const ErrorKind = "http"

// Observer receives what the HTTP server does, for its metrics. Every
// method must be safe for concurrent use and cheap: they are called on
// the request path.
type Observer interface {
	// HTTPRequest counts one answered request by route label (one of
	// RouteCodes' keys) and status code, with its duration.
	HTTPRequest(route string, code int, took time.Duration)
	// HTTPConnsOpen reports the connections open (admitted, not closed).
	HTTPConnsOpen(n int)
	// HTTPConnRefused counts a connection refused at accept and
	// HTTPConnEvicted one closed to admit a new one, by the cap reached:
	// "total" or "per_address".
	HTTPConnRefused(cap string)
	HTTPConnEvicted(cap string)
	// HTTPBulkInFlight reports the bulk downloads being served.
	HTTPBulkInFlight(n int)
	// HTTPBulkRefused counts a bulk download answered 503 for want of a
	// slot, by the cap reached ("total" or "per_address").
	HTTPBulkRefused(cap string)
	// HTTPSlowCut counts an answer cut off because the client read it
	// slower than the minimum rate, by kind: "bulk" (a bulk download) or
	// "answer" (any other).
	HTTPSlowCut(kind string)
	// HTTPHandlerPanicked counts a handler that panicked.
	HTTPHandlerPanicked()
	// Error counts a request that failed on the server's side; kind is
	// ErrorKind.
	Error(kind string)
	// SetStoreSize and SetIndexedTip report the store's size on disk and
	// the indexed tip's height and block time, read from the view just
	// before /metrics is served.
	SetStoreSize(bytes int64)
	SetIndexedTip(height uint32, blockTime time.Time)
}

// NodeState is the node's state as the daemon last saw it, for /readyz
// and /status. Its methods must be safe for concurrent use.
type NodeState interface {
	// NodeHeight returns the node's tip height as last seen; false before
	// it was first seen.
	NodeHeight() (int64, bool)
	// NodeReachability returns the error of the last attempt to reach the
	// node (nil if it answered); false before the first attempt.
	NodeReachability() (error, bool)
}

// Metrics is what the server reports to (Observer), reads the node's state
// from (NodeState) and serves at /metrics (Handler).
type Metrics interface {
	Observer
	NodeState
	// Handler serves the metrics in the Prometheus text format.
	Handler() http.Handler
}
