// Package httpapi is cfindexd's HTTP server: Bitcoin Core-compatible REST
// endpoints for BIP-158 filters, bulk bootstrap files for wallets that sync
// thousands of filters, Prometheus metrics, and health checks.
//
// It owns the HTTP surface and the Prometheus registry (Metrics). It reads
// the filter store only through ChainView and must not write to it, talk to
// the node, or keep chain state of its own: every answer is computed from
// the view at request time, so a reorg is visible at the next request.
//
// An answer that takes several reads (a block looked up by hash, then the
// chain above it up to the tip; a bulk range resolved against the tip, its
// ETag and its first chunk) takes them from one committed state through
// ChainView.Read (a store.Snapshot), so no request fails or mixes two
// states because the indexer committed or rolled back in between: the
// store publishes its in-memory tip only after a commit's final fsync, and
// reading that tip beside the file would see a block in one and not the
// other. A block not on the indexed chain is answered as Core answers a
// block it does not have. Nothing is written to a client while a snapshot
// is open.
//
// # Server
//
// New(Config, ChainView, *Metrics, zerolog.Logger) builds a Server; Run(ctx)
// listens on Config.Addr (HTTP is off when it is empty) and shuts down
// gracefully when ctx ends. Limits: ReadHeaderTimeout (5 s), ReadTimeout,
// WriteTimeout (BulkWriteTimeout for bulk downloads), IdleTimeout (30 s,
// at most MaxIdleTimeout), MaxHeaderBytes, MaxURILength (414). Request
// bodies are never read.
//
// Every client may be hostile, so the server bounds what one can hold:
//
//   - Connections (conngate.go): at most MaxConns open and MaxConnsPerAddr
//     from one client address (an IPv4 address or an IPv6 /64), enforced by
//     a net.Listener wrapper when a connection is accepted. Over a cap, the
//     connection that is idle between keep-alive requests or has not sent a
//     request yet, from the address holding the most connections, and
//     waiting longest, is closed to admit the new one (http.Server's
//     ConnState hook tells which are evictable); a connection serving a
//     request is never closed. When nothing can be closed the new
//     connection gets a fixed 503 "too many connections" written straight
//     to its socket and is closed in the accept loop: no goroutine, no
//     request read, no file descriptor kept.
//   - Bulk downloads (bulkslots.go, minrate.go): at most MaxBulkInFlight at
//     once and MaxBulkPerAddr per client address (503 with Retry-After
//     beyond). With every slot taken, a newcomer takes over the youngest
//     download of the network group (IPv4 /16, IPv6 /32) holding the most
//     slots if that group holds at least two more than the newcomer's (the
//     download is cut; groups cannot take slots back and forth), so a few
//     hosts reading just above the minimum rate cannot lock out every other
//     network. Each window of BulkMinRateWindow, the first included, must
//     deliver BulkMinRate × BulkMinRateWindow bytes to the socket, or the
//     download is cut off through the connection's write deadline and its
//     slot freed. Counting per window, not on average, keeps socket buffers
//     that swallow megabytes at once from buying a client that stopped
//     reading minutes of slot. A filters file is read 64 filters at a time.
//   - Panics (recover.go): a handler that panics is answered 500 "internal
//     error" (or, once the response has begun, its connection is cut),
//     logged at error with the stack and counted; the server goes on.
//     http.ErrAbortHandler, raised on purpose to cut a response, passes to
//     net/http untouched.
//
// # Bitcoin Core-compatible endpoints
//
// Same paths, formats, limits, status codes and error texts as Core's
// src/rest.cpp (checked byte for byte against responses recorded from Core
// v31), so existing tools work:
//
//	GET /rest/blockfilter/basic/<hash>.<bin|hex|json>
//	GET /rest/blockfilterheaders/basic/<hash>.<bin|hex|json>?count=<1..2000, default 5>
//	GET /rest/blockfilterheaders/basic/<count>/<hash>.<bin|hex|json>   (deprecated form)
//	GET /rest/headers/<hash>.<bin|hex>?count=<1..2000, default 5>
//	GET /rest/headers/<count>/<hash>.<bin|hex>                         (deprecated form)
//	GET /rest/blockhashbyheight/<height>.<bin|hex|json>
//
// A blockfilter .bin is Core's serialized BlockFilter: the filter type byte
// (0 = basic), the block hash in internal byte order, a CompactSize length,
// then the filter as BIP-158 encodes it (CompactSize N, then the
// Golomb-coded set). .hex is the same bytes as lower-case hex plus "\n";
// .json is {"filter":"<hex of the filter>"} plus "\n". Stale blocks whose
// filter is still stored are served too.
//
// blockfilterheaders lists the filter headers of the active chain from the
// given block upward, at most count of them: .bin is 32 bytes each in
// internal order, .hex their hex plus "\n", .json an array of display-order
// hex strings plus "\n". A block that is unknown or not on the active chain
// gives an empty 200 (Core's behaviour).
//
// headers are the 80-byte block headers of the active chain from the given
// block upward (empty for an unknown or stale block), .hex their hex plus
// "\n". Core's .json form of headers carries chainwork, nTx, mediantime and
// difficulty, which cfindexd does not keep; it answers 404 "output format
// not found (available: .bin, .hex)" instead (the one deliberate
// difference). blockhashbyheight gives the active block hash at a height:
// .bin 32 bytes in internal order, .hex display order plus "\n", .json
// {"blockhash":"<hex>"}; errors 400 "Invalid height: <sanitized raw>"
// (Core's ParseInt32: optional '+', no "+-", negative refused) and 404
// "Block height out of range".
//
// Errors are text/plain, the message followed by CRLF, checked in Core's
// order: wrong number of path parts (400 "Invalid URI format. ..."), bad
// count (400 "Header count is invalid or out of acceptable range (1-2000):
// <raw>"), bad hash (400 "Invalid hash: <raw>"; anything but exactly 64 hex
// digits, which includes an unknown extension such as ".xml" since Core only
// strips .bin/.hex/.json), filter type other than basic (400 "Unknown
// filtertype <name>"), unknown block (404 "<hash> not found"), and only
// then a missing extension (404 "output format not found (available: .bin,
// .hex, .json)"). Counts are strict decimal (no sign, no spaces). Like Core,
// POST is answered like GET, and other /rest/ paths get libevent's empty
// 404. Core's other endpoints (/rest/block, /rest/tx, /rest/chaininfo,
// ...) are not served: cfindexd has no blocks, transactions or UTXOs.
//
// # Bulk bootstrap files
//
// Flat binary files by height, for wallets and CDNs (all for the basic
// filter type, active chain only):
//
//	GET /bulk/index.json
//	GET /bulk/headers/<start>-<end>.bin
//	GET /bulk/filterheaders/<start>-<end>.bin
//	GET /bulk/filters/<start>.bin
//	GET /bulk/neutrino/blockheaders.bin          (0 .. tip)
//	GET /bulk/neutrino/filterheaders.bin         (0 .. tip)
//	GET /bulk/neutrino/blockheaders/<start>-<end>.bin
//	GET /bulk/neutrino/filterheaders/<start>-<end>.bin
//
// index.json gives tip_height, tip_hash, tip_filter_header, final_height
// (the highest height at least ReorgSafetyDepth deep, -1 if none), interval
// (2000), reorg_safety_depth and network_magic.
//
// headers and filterheaders ranges start at a multiple of 2,000 and hold at
// most 2,000 heights (<start>-<end> inclusive, canonical decimals, end at
// most the tip). headers is the 80-byte wire serialization of each block
// header in height order; each header's PrevBlock is the hash of the one
// before it. filterheaders is the 32-byte filter header of each height, in
// internal byte order (as in cfheaders), where
// header(h) = dSHA256(dSHA256(filter(h)) || header(h-1)) and header(-1) = 0.
//
// filters/<start>.bin (start a multiple of 2,000) holds the filters of
// heights start .. min(start+1999, tip), each as a CompactSize length
// followed by the BIP-158 filter (itself starting with CompactSize N), in
// height order with nothing else. To verify a file, take the filter header
// at start-1 from a filterheaders file (zero for start 0), fold the filters
// through the formula above and compare each result with the filterheaders
// file; the last must equal the header at the end of the range.
//
// The neutrino files use neutrino v0.18.0's chainimport format, readable by
// its header import (ImportOptions.BlockHeadersSource and
// FilterHeadersSource take these URLs): a 10-byte prefix — network magic
// (uint32 little-endian, Config.Net), version byte 0, header type byte (0
// block headers, 1 regular filter headers), start height (uint32
// little-endian) — then 80-byte block headers or 32-byte filter headers
// from the start height upward. The range form pins both files to the same
// heights (the whole-chain form follows the tip, so two downloads may
// differ by a block). Neutrino v0.18.0 appends a file whose start height is
// above 0 from the wrong offset and silently adds nothing, so serve neutrino
// users ranges starting at 0.
//
// Caching: a range whose last height is at least ReorgSafetyDepth (default
// 144) blocks below the tip is final: a strong ETag and "Cache-Control:
// public, max-age=31536000, immutable", so a CDN can keep it forever. Other
// ranges (and filters files that are not yet full, and the whole-chain
// neutrino files) get a weak ETag and "public, max-age=<NearTipMaxAge>".
// The ETag is derived from the kind, the range and the block hash and filter
// header at its end, which commit to every byte of the file, so a
// conditional request (If-None-Match, weak comparison) is answered 304
// without reading the range. A reorg deeper than ReorgSafetyDepth would
// change a "final" file; its ETag changes with it, but caches that honoured
// "immutable" keep the old bytes, which still verify against the old
// chain's headers. A file that fits one store read (headers and filter
// headers up to 2,000 heights, filters up to 250) comes from one snapshot;
// a longer one is read in chunks, each from its own snapshot and checked to
// link to the one before, and a download that races a reorg is cut off (the
// body ends early) rather than completed with bytes of two chains. Bulk
// responses allow any origin (CORS) since the data is public.
//
// # Operations
//
// GET /metrics serves Metrics' private registry in the Prometheus text
// format, with the Go runtime (go_*) and process (process_*) collectors:
// cfindexd_build_info{version,commit,goversion} (1), cfindexd_node_up,
// cfindexd_node_height, cfindexd_node_tip_age_seconds (absent until the
// node's tip is seen), cfindexd_indexed_height and
// cfindexd_last_indexed_timestamp_seconds (the indexed tip's block time,
// both read from the store at each scrape), cfindexd_blocks_indexed_total,
// cfindexd_index_rate_blocks_per_second (blocks committed over the last
// 10 s at scrape time, so 0 when stalled), cfindexd_filter_bytes_total,
// cfindexd_reorgs_total, cfindexd_reorg_blocks_total,
// cfindexd_errors_total{kind}, cfindexd_http_requests_total{route,code},
// cfindexd_http_request_duration_seconds{route} (a histogram from 1 ms to
// 5 min), cfindexd_p2p_peers_connected,
// cfindexd_p2p_{messages_received,received_bytes,messages_sent,sent_bytes}_total
// {command}, cfindexd_p2p_disconnects_total{cause},
// cfindexd_store_size_bytes and cfindexd_prevouts_resolved_total{from},
// and the HTTP limits' cfindexd_http_connections_open,
// cfindexd_http_connections_refused_total{cap},
// cfindexd_http_connections_evicted_total{cap} (cap: total or
// per_address), cfindexd_http_bulk_in_flight,
// cfindexd_http_bulk_refused_total{cap}, cfindexd_http_bulk_slow_cut_total
// and cfindexd_http_handler_panics_total.
// Every counter and every label value the code knows (error kinds, routes
// with code 200, disconnect causes, the commands the P2P server sends, both
// prevout sources) is exported from the start at 0. Route labels are fixed
// names (rest_blockfilter, bulk_filters, ...), never raw paths.
//
// GET /healthz answers 200 "ok" while the process serves HTTP. GET /readyz
// answers 200 with {"ready":true,...} while the node answered the
// follower's last round (Metrics.NodeReachable), the indexed tip is at most
// ReadyMaxLag (default 2) blocks below the node's tip as last reported to
// Metrics.NodeTip, and, when ReadyMaxTipAge is set, the indexed tip's block
// timestamp is at most that old; otherwise 503 with
// {"ready":false,"reason":...} naming the first condition that fails. The
// body carries indexed_height, node_height and indexed_tip_age_seconds.
// Node reachability comes from the follower after each round and, before
// the follower's first round and while a node restart is being checked,
// from the daemon (it waits for the node while already serving), so
// /readyz says "node unreachable" from the first second.
//
// GET /status answers the StatusReport as JSON (status.go): what the daemon
// reports through Config.Status (version, commit, start time, chain, the
// node's address, reachability, kind, version, prevout source and last
// error, P2P peers, store path) with the indexed tip and store size from
// the view and the node's height from Metrics; `cfindexd status` reads it.
//
// Shutdown: after the context of Run/Serve ends, requests in flight get
// ShutdownTimeout, idle keep-alive connections close at once, and so do
// connections that have not sent a whole request yet (shutdown.go), which
// net/http alone would wait for until they are five seconds old.
package httpapi
