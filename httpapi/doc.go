// Package httpapi is cfindexd's HTTP API: Bitcoin Core-compatible REST
// endpoints for BIP-158 filters, flat bulk files that wallets and CDNs
// bootstrap from, health and readiness checks, a status report, and the
// /metrics endpoint.
//
// It reads the filter store only through the ChainView it declares (the
// daemon adapts the store to it) and never writes to it, talks to the node
// or keeps chain state of its own: every answer is computed from the view
// at request time, so a reorg is visible at the next request. It reports
// what it does to the Metrics it is given (its Observer) and serves them
// at /metrics; the node's state for /readyz and /status comes from the same
// place (NodeState). It imports neither the store, nor the indexer, nor
// the P2P server.
//
// An answer that takes several reads (a block looked up by hash, then the
// chain above it; a bulk range resolved against the tip, its ETag and its
// first chunk) takes them from one committed state through ChainView.Read,
// so no request fails or mixes two states because the indexer committed or
// rolled back in between. Nothing is written to a client while a state is
// open. A block not on the indexed chain is answered as Core answers a
// block it does not have.
//
// Endpoints (route labels in route.go):
//
//	/rest/blockfilter/basic/<hash>.<bin|hex|json>           corerest/filter.go
//	/rest/blockfilterheaders/basic/<hash>.<bin|hex|json>    corerest/filter.go
//	/rest/headers/<hash>.<bin|hex>                          corerest/headers.go
//	/rest/blockhashbyheight/<height>.<bin|hex|json>         corerest/headers.go
//	/bulk/index.json, /bulk/{headers,filterheaders}/<start>-<end>.bin,
//	/bulk/filters/<start>.bin                               bulk.go
//	/bulk/neutrino/{blockheaders,filterheaders}[/<start>-<end>].bin   neutrino.go
//	/sp/tweaks/<dust>/<start>, /sp/{tweakdata,filters,headers}/<start>,
//	/sp/checkpoints (silent payments)                       spserve.go
//	/blindbit/… (BlindBit Oracle v1 JSON)                   blindbit.go
//	/healthz, /readyz                                       health.go
//	/status                                                 status.go
//	/metrics                                                the Metrics' Handler
//
// The /rest/ endpoints are package corerest's: it parses their targets and
// writes Core's answers (paths, formats, limits, status codes and error
// texts of src/rest.cpp, checked byte for byte against recorded responses)
// from the view as restchain.go adapts it; this package routes, bounds and
// counts them like every other request, and answers POST like GET there.
//
// Every client may be hostile, so the server bounds what one can hold:
// connections in total and per address (conngate.go; over a cap one is
// closed from the network, then address, holding the most, idle before
// busy), a minimum rate per window for every response (minrate.go),
// requests on a connection served one at a time (a client pipelining
// requests it never reads holds one answer), bulk downloads
// (bulkslots.go), header and URI sizes and timeouts (Config). Bodies are
// never read; a panicking handler is answered 500 (recover.go);
// MemoryBound bounds the heap; requests in flight at shutdown get
// Config.ShutdownTimeout (shutdown.go).
//
// Caveats: a bulk range at least Config.ReorgSafetyDepth deep is served as
// immutable; a deeper reorg changes its bytes and ETag, but caches that
// honoured "immutable" keep the old bytes (which still verify against the
// old chain's headers). Neutrino's import appends a file whose start
// height is above 0 from the wrong offset, so serve neutrino users ranges
// starting at 0.
package httpapi
