// Package p2p serves BIP-157 compact block filters (and, opt-in, BIP-37
// Bloom-filter wallets) to light clients over the Bitcoin P2P protocol, v1
// or BIP-324 v2 transport on one port (package transport), from the
// committed filter store.
//
// It owns the accept loop, admission, the handshake, each peer's read,
// dispatch and write loops, the request handlers (getcfilters,
// getcfheaders, getcfcheckpt, getheaders, getdata, getblocks), optional
// transaction relay, tip announcements, and every bound on what a peer may
// cost. It depends only on the interfaces it declares (ChainView,
// BlockFetcher, TxRelayer, Metrics) and bip37.Mempool; their adapters to
// the store and the node live with the daemon's wiring. It must not write to the
// store, fetch blocks the store does not know, relay addresses, keep
// package-level mutable state or log through a global logger.
//
// # Model
//
// Handlers are functions of (request, ChainView) that stream their answers
// into an emit callback; they never touch sockets, so they are tested and
// fuzzed without a network. A peer runs three goroutines: the reader
// (reads a frame, decodes it and runs its handler inline, so a peer has at
// most one request in progress), the writer (drains the peer's queue onto
// the socket) and the ticker (pings and tip announcements). Each recovers
// its own panics: the peer is disconnected, the process unharmed.
//
// Nothing a peer did not pay for: package msgread reads its messages
// (caps checked against the frame header before anything is read,
// payloads not decoded discarded as they arrive, declared counts checked
// before wire allocates, transactions kept raw). Answers take bytes from the peer's send
// budget and a server-wide pool, so a peer that does not read stops being
// served; store reads and large answers take one of a few server-wide work
// slots. MemoryBound is what all this adds up to for a configuration.
//
// Serving a filter hashes nothing and builds no wire.Message: the store
// keeps each cfilter message's checksum beside the filter
// (wireframe.CFilterHasher), so a frame is a header, a short prefix and a
// copy of the filter, many framed into one buffer per chunk.
//
// Admission, eviction, discouragement, the whitelist, rates, the upload
// target and the BIP-37 CPU share are package peerpolicy's answers; this
// package decides when to ask. Package blockproxy fetches and caches the
// blocks peers ask for; package bip37 serves Bloom-filter wallets once
// this package has read and checked their messages. With
// Config.SilentPayments the silent-payment index is served as the
// experimental filter type of package spfilter (spserve.go dispatches it).
//
// # Caveats
//
// Semantics follow Bitcoin Core's net_processing, with one deliberate
// difference: a stop hash this server does not know yet is waited for
// (Config.StopHashWait) and then ignored, not punished, because the server
// trails its node by the time it takes to build a filter. Tips are
// announced only once their filters are committed (ChainView), never on a
// node notification. Misbehaviour after the handshake (ErrMisbehaving)
// discourages the address; invalid requests and anything before the
// handshake only disconnect, as in Core. BIP-37 serving is off unless
// Config.Bloom.Enabled, as Core's -peerbloomfilters.
package p2p
