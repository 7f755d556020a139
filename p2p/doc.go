// Package p2p serves BIP-157 compact block filters to light clients (neutrino
// and friends) over the Bitcoin P2P protocol.
//
// It owns: the TCP listener, the version/verack handshake, the per-peer read,
// dispatch and write loop, the BIP-157 request handlers (getcfilters,
// getcfheaders, getcfcheckpt), getheaders, getdata for blocks, optional
// transaction relay to the node, tip announcements, and the defences against
// hostile peers (peer and per-IP limits, message size caps checked before any
// allocation, handshake/idle/write timeouts, a per-peer budget of unsent
// response bytes, a server-wide limit on concurrent filter reads, and a
// temporary ban by IP for misbehaviour).
//
// Model. Handlers are plain functions of (request, ChainView) that stream
// their response messages into an Emit callback; they never touch sockets, so
// they are unit-tested and fuzzed without a network. A peer runs three
// goroutines: the reader (reads a frame, checks its size cap, decodes it and
// runs the handler inline, so a peer has at most one request in progress),
// the writer (drains the per-peer queue onto the socket with a write
// deadline) and the ticker (pings and tip announcements). Emit blocks while
// the peer's queue holds more than Config.PeerSendBudget bytes, which is what
// stops one peer that does not read its answers from making the server read
// more on its behalf.
//
// Semantics follow Bitcoin Core's net_processing: the limits of 1,000 filters
// and 2,000 filter headers per request, checkpoints every 1,000 blocks, and
// disconnection for an unknown filter type, start above stop or a range over
// the limit. One deliberate difference: a stop hash this server does not know
// yet is waited for (Config.StopHashWait, on ChainView.TipChanged) and then
// ignored, not punished, because this server trails its node by the time it
// takes to build a filter and a client may have heard of the block from
// another peer first.
//
// Tips are announced only after ChainView reports them (that is, after the
// filter is committed), never on a node notification.
//
// It must not: write to the store, talk to the node except through
// BlockFetcher and TxRelayer, relay addresses (getaddr gets no answer), keep
// package-level mutable state, or log through a global logger.
package p2p
