// Package bip37 serves BIP-37 Bloom-filter wallets for the P2P server:
// their filters, filtered blocks, and the mempool transactions that match,
// within a share of the machine's CPU.
//
// A Server is shared by all peers; a Peer is one peer's state (its filter,
// relay flag, update budget, what it was told of the mempool). The P2P
// server (package p2p) owns the connection: it reads each message, checks
// what is its to check (the handshake, whether serving is on, the upload
// target, whether the block is one it knows) and calls FilterLoad,
// FilterAdd, FilterClear, FilteredBlock, AskMempool or MempoolTx; it runs
// Announce in a goroutine of the peer's; answers go out through its Emit,
// which blocks on the peer's send budget.
//
// Semantics follow Bitcoin Core's net_processing: a filter over Core's
// limits, or a filteradd without a filter, is misbehaviour (errors wrap
// msgread.ErrMisbehaving); this server's own policy (the filter's
// estimated false-positive rate within [MinFPR, MaxFPR], a rate of filter
// updates) refuses a request with an *InvalidRequestError, which the
// caller turns into a disconnect without penalty. Transactions are
// announced only to a peer with a filter loaded and relay on, matched in
// batches; a mempool request is answered at most once per interval, a
// chunk at a time; getdata for a transaction is answered only for
// transactions the peer was told of (Core's m_last_inv_sequence).
//
// All BIP-37 work (decoding blocks, hashing txids, matching, and a charge
// per frame sent) runs under one server-wide meter (peerpolicy.WorkMeter,
// Config.CPUShare), whose slots go to the peer with the least recent work.
// A block is matched a piece at a time (a bounded number of element
// hashes per grant), so the meter's debt after any piece is small and a
// wallet first in line waits for one piece, not a maximal filter's block.
// Decoded blocks come from blockproxy.DecodedCache, so many wallets asking
// for a new block decode it once; a filtered block's transactions are
// encoded a batch at a time with the block pinned, and no pin is held
// while the batch waits for the peer's send budget. The package keeps no
// connection state, reads no sockets, and knows nothing of the store.
package bip37
