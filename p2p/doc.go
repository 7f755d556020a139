// Package p2p serves BIP-157 compact block filters to light clients (neutrino
// and friends) over the Bitcoin P2P protocol (v1 transport).
//
// It owns: the TCP listener, the version/verack handshake, the per-peer read,
// dispatch and write loop, the BIP-157 request handlers (getcfilters,
// getcfheaders, getcfcheckpt), getheaders, getdata for blocks, optional
// transaction relay to the node, tip announcements, and the defences against
// hostile peers (peer and per-address limits, message size caps checked against
// the frame header before any payload is read or allocated, handshake/idle/
// write timeouts, a per-peer budget of unsent response bytes, a server-wide
// limit on concurrent filter reads, and a temporary ban for misbehaviour).
// Limits and bans count IPv4 peers by address and IPv6 peers by /64
// (addrgroup.go), since one subscriber holds a whole /64.
//
// Model. Handlers are plain functions of (request, ChainView) that stream
// their response messages into an emit callback; they never touch sockets, so
// they are unit-tested and fuzzed without a network. A peer runs three
// goroutines: the reader (reads a frame, checks its size cap, decodes it and
// runs the handler inline, so a peer has at most one request in progress),
// the writer (drains the per-peer queue onto the socket with a write
// deadline) and the ticker (pings and tip announcements). Emitting blocks
// while the peer's queue holds Config.PeerSendBudget unsent bytes, and the
// reader does not read the peer's next request meanwhile: a peer that does
// not read its answers stops costing the server anything. Filter-store reads
// additionally take one of Config.MaxFilterWork server-wide slots, so a few
// peers cannot monopolise the disk. Only getcfilters reads filters:
// getcfheaders is answered from the filter hashes the store keeps beside the
// filter headers (ChainView.FilterHashesForStop) and getcfcheckpt from one
// snapshot read of every 1,000th filter header
// (ChainView.FilterHeaderCheckpoints), as Bitcoin Core's filter index does.
//
// Semantics follow Bitcoin Core's net_processing: at most 1,000 filters per
// getcfilters (one cfilter each), 2,000 filter hashes per getcfheaders,
// checkpoints every 1,000 blocks, 2,000 headers per getheaders from the first
// locator hash on the active chain, stop hashes on stale branches served
// along their own chain, and disconnection for an unknown filter type, start
// above stop, a range over the limit, more than 101 locator hashes, or
// BIP-37/mempool messages (NODE_BLOOM is not offered). One deliberate
// difference: a stop hash this server does not know is waited for
// (Config.StopHashWait, at most 5 s, on ChainView.TipChanged) and then
// ignored, not punished, because this server trails its node by the time it
// takes to build a filter and a client may have heard of the block first.
//
// Tips are announced only when ChainView reports them, i.e. after their
// filters are committed, never on a node notification: inv to most peers,
// headers (up to 8) to peers that sent sendheaders and are known to have the
// parent. What each peer is known to have is kept in a rolling Bloom filter
// (1,000 items at p = 1 %, two generations), so a tip is announced once.
//
// NewStoreView and NewNodeBlockFetcher adapt the store and the node client
// to the interfaces here; *bitcoind.Client is a TxRelayer as it is.
//
// It must not: write to the store, talk to the node except through
// BlockFetcher and TxRelayer, fetch blocks the store does not know, relay
// addresses (getaddr gets no answer), keep package-level mutable state, or
// log through a global logger. Misbehaving peers are logged at debug level.
package p2p
