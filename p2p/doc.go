// Package p2p serves BIP-157 compact block filters to light clients (neutrino
// and friends) over the Bitcoin P2P protocol (v1 transport).
//
// It owns: the TCP listener, admission (caps, eviction, discouragement,
// whitelist), the version/verack handshake, the per-peer read, dispatch and
// write loops, the BIP-157 request handlers (getcfilters, getcfheaders,
// getcfcheckpt), getheaders, getdata for blocks (a proxy to the node),
// optional transaction relay to the node, tip announcements, opt-in BIP-37
// serving (Config.Bloom), and every bound on what peers may cost. It must
// not: write to the store, talk to the node except through BlockFetcher,
// TxRelayer and the Mempool mirror, fetch blocks the
// store does not know, relay addresses (getaddr gets no answer), keep
// package-level mutable state, or log through a global logger. Misbehaving
// peers are logged at debug level; a recovered panic at error.
//
// # Model
//
// Handlers are plain functions of (request, ChainView) that stream their
// response messages into an emit callback; they never touch sockets, so
// they are unit-tested and fuzzed without a network. A peer runs three
// goroutines: the reader (reads a frame, decodes it and runs the handler
// inline, so a peer has at most one request in progress), the writer
// (drains the peer's queue onto the socket with a write deadline) and the
// ticker (pings, at once and then every PingInterval, and tip
// announcements). Each recovers its own panics (recover.go): logged with
// the stack, counted, the peer disconnected, the process unharmed.
//
// # Bounds: nothing a peer did not pay for
//
// Frames (frame.go). A command's payload cap is checked against the frame
// header before anything is read. Before verack only handshake commands
// are decoded; tx, inv and notfound only with relay on; every other payload
// is discarded as it arrives, unbuffered, including the messages this
// server never decodes (headers, addr, block, ...), whose declared counts
// therefore cost nothing. Payloads up to 16 KiB are read under the idle
// deadline; a larger one is read under a deadline that grows with the
// bytes received (Config.MinRecvRate, after a 5 s grace), and if it is to
// be decoded it first takes its bytes from the server-wide receive budget
// (Config.RecvBudget), or is discarded when that is spent. Buffers grow
// with what has arrived, never with what a header claims.
//
// Decoding (decode.go, payloadscan.go, txscan.go). wire's decoders allocate
// from declared counts, so every count they would read (inventory entries,
// locator hashes, the version's user agent) is checked against the bytes
// that remain first. Transactions are never decoded into wire.MsgTx: scanTx
// checks the structure in place, every input, output and witness count
// against what remains, computes txid and wtxid, and the raw bytes go to
// the node (rawTx). Both walk the payload with internal/wirescan, the
// module's one CompactSize and transaction reader, and turn its errors
// into misbehaviour. FuzzScanTx holds scanTx to wire's acceptance and ids.
//
// Answers (budget.go). Emitting takes the entry's bytes from the peer's
// budget (Config.PeerSendBudget) and the server-wide pool
// (Config.SendBudget); a handler that cannot queue waits, and the peer's
// next request is not read meanwhile. A send-queue entry is one frame, or
// a chunk of cfilter frames back to back. A peer whose queue is empty may
// always queue one entry, pool or not, so a peer that reads always makes
// progress however many slow readers hold the pool; a peer whose queue does
// not drain for Config.SendStallTimeout is disconnected. getcfilters
// fixes its blocks in one snapshot (ChainView.BlockHashesForStop) and then
// reads their filters 16 KiB at a time as the budget admits them
// (ChainView.EachFilter), each chunk framed into one buffer (cfilterChunk:
// one allocation per chunk, none per filter) and queued as one entry.
// Serving a filter hashes nothing and builds no wire.Message: the store
// keeps each cfilter's message checksum beside its filter
// (store.CFilterChecksum), so a frame is the 24-byte header with that
// checksum, the 35-or-so-byte payload prefix and a copy of the filter; the
// store's filters of stale blocks, with their checksums, make that one
// snapshot's answer whatever reorgs happen meanwhile. The writer writes
// each entry into the peer's 64 KiB buffered writer, flushes when the
// queue is empty, and gives each socket write Config.WriteTimeout
// (deadlineWriter); a BatchMetrics counts a chunk's messages in one call.
// cfheaders frames are built in one allocation of their exact size, their
// 2,000 hashes copied in and hashed once for the checksum. Store reads and the
// building of large answers (2,000 headers) take one of
// Config.MaxFilterWork server-wide slots, never held while waiting for a
// peer. getcfheaders is answered from the filter hashes the store keeps
// beside the filter headers, and getcfcheckpt from one snapshot read of
// every 1,000th filter header, as Bitcoin Core's filter index does.
//
// MemoryBound computes what all this adds up to for a configuration;
// README.md spells the formula out (about 210 MiB with the defaults).
//
// # Slots, eviction, discouragement (admission.go, eviction.go, discourage.go)
//
// Connections count against MaxPeers, MaxPeersPerIP (IPv4 address, IPv6
// /64) and MaxPeersPerSubnet (IPv4 /16, IPv6 /48). When full, a newcomer
// evicts a peer chosen by selectPeerToEvict, a pure function over candidate
// descriptions after Core's SelectNodeToEvict (netgroups IPv4 /16, IPv6
// /32): diverse netgroups, low pings, recently served and long-connected
// peers are protected; a discouraged peer goes first, else the newest of
// the most crowded netgroup; when nobody can be evicted the newcomer is
// refused. A malformed message or protocol violation after the handshake
// (ErrMisbehaving) discourages the address: it is admitted only while two
// or more slots are free and is evicted first; the list is bounded and
// forgets its oldest entries. Invalid requests (errInvalidRequest: BIP-157
// range rules, unknown filter types, more than 101 locator hashes, BIP-37
// messages with serving off, filters the BIP-37 policy refuses) and
// anything before the handshake only disconnect, as in Core.
// Whitelisted networks (Config.Whitelist) are exempt from the per-address
// and per-subnet caps, eviction, discouragement and the upload target.
//
// # Blocks and transactions (blockproxy.go, getdata.go, txrelay.go)
//
// getdata for blocks the store knows is served from a byte-bounded cache of
// encoded blocks shared by peers, filled through fetchGate: at most
// Config.MaxBlockFetches node fetches at once, one while
// Config.IndexerBusy reports the indexer catching up, served in arrival
// order. The BlockFetcher should be a node client of its own (the
// daemon's adapter over a client with a small MaxConns), so
// that peers never delay the indexer's calls. Once Config.MaxUploadTarget
// bytes of blocks were served in the last 24 hours, blocks more than a
// week older than the tip are refused and their requester disconnected.
// Transaction relay keeps pending requests in a FIFO so that an inv costs
// linear work, and holds each peer and the server to a rate.
//
// # Protocol
//
// Semantics follow Bitcoin Core's net_processing: at most 1,000 filters per
// getcfilters (one cfilter each), 2,000 filter hashes per getcfheaders,
// checkpoints every 1,000 blocks, 2,000 headers per getheaders from the
// first locator hash on the active chain, stop hashes on stale branches
// served along their own chain. One deliberate difference: a stop hash this
// server does not know is waited for (Config.StopHashWait, at most 5 s, on
// ChainView.TipChanged) and then ignored, not punished, because this server
// trails its node by the time it takes to build a filter and a client may
// have heard of the block first.
//
// # BIP-37 (bloomserve.go, filteredblock.go, mempoolserve.go, getblocks.go)
//
// Off unless Config.Bloom.Enabled, as Core's -peerbloomfilters: then
// filterload, filteradd, filterclear and mempool end the connection without
// penalty (commandRules' withoutBloom; a whitelisted peer's mempool is
// ignored, as Core spares noban peers) and NODE_BLOOM is not offered. On,
// each peer has a bloomPeer: its filter and Core's relay flag under a
// mutex (the reader loads filters and matches blocks, the announcer
// goroutine matches mempool transactions, and matching updates the
// filter), its update budget, and Core's getblocks continuation block.
// Core's limits are protocol violations (a filter over 36,000 bytes or 50
// hash functions, a filteradd element over 520 bytes or without a filter);
// the policy — an estimated false-positive rate (fill^k) outside
// [MinFPR, MaxFPR], more updates than UpdateAllowance and then one per
// UpdateBlocks blocks, a merkleblock over 256 KiB — refuses invalid
// requests. MSG_FILTERED_BLOCK is answered with a merkleblock and the
// matched transactions without witness, nothing without a filter;
// MSG_FILTERED_WITNESS_BLOCK is ignored (Core does not serve it). Blocks
// come through the block proxy's gate and cache, decoded once into a
// byte-bounded cache of decoded blocks and txids (decodedCache, pinned
// blocks counted) that peers share. Decoding, txid hashing and matching
// run under a server-wide workMeter: at most CPUShare of GOMAXPROCS cores
// on average, in slots granted in arrival order. The announcer subscribes
// to the Mempool mirror while the peer has a filter, matches new
// transactions in 250 ms batches and announces the matches; mempool
// requests are answered by the announcer, a 1,000-transaction chunk at a
// time, at most once per 5 s; getdata for a mempool transaction is
// answered only if it was in the mirror before the peer's last inv (the
// mirror's Seq, Core's m_last_inv_sequence).
//
// Tips are announced only when ChainView reports them, i.e. after their
// filters are committed, never on a node notification: inv to most peers,
// headers (up to 8) to peers that sent sendheaders and are known to have the
// parent. What each peer is known to have is kept in a rolling Bloom filter
// (1,000 items at p = 1 %, two generations), so a tip is announced once.
//
// NewStoreView adapts the store to the interfaces here; the daemon
// (cmd/cfindexd) adapts the node client and the mempool mirror.
package p2p
