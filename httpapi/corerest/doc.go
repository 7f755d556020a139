// Package corerest answers Bitcoin Core's REST endpoints for BIP-158
// filters and the chain: /rest/blockfilter/basic/<hash>,
// /rest/blockfilterheaders/basic/<hash>, /rest/headers/<hash> and
// /rest/blockhashbyheight/<height>, each in .bin, .hex or .json, with
// Core's paths, formats, limits, status codes and error texts
// (src/rest.cpp), and libevent's empty 404 for other /rest/ paths.
//
// It parses a request target (Parse) and writes the answer (Serve) from
// the Chain it is given; it owns no connection, no limit and no state.
// The HTTP server (package httpapi) routes, bounds and counts requests,
// and adapts its view of the filter store to Chain. One deliberate
// difference from Core: /rest/headers' .json form needs data cfindexd does
// not keep and is answered 404.
//
// Files: request.go and query.go parse a target the way Core and libevent
// do; filter.go and headers.go answer the endpoints; body.go writes the
// .bin, .hex and .json forms as the client reads them (MemoryBound in
// package httpapi counts on it).
package corerest
