// Package mempool keeps a bounded mirror of the node's mempool for BIP-37
// serving: new transactions announced to peers whose filter they match,
// and the whole mempool for a peer that asks.
//
// # Model
//
// Mirror reads the node through the Source interface it declares (the
// daemon adapts the node client to it) and follows it in one of two ways:
//
//   - Polling (btcd, or Core without ZMQ): getrawmempool every
//     PollInterval; transactions no longer listed are removed, new ones
//     fetched in batches. Each poll lists the whole mempool, cheap on btcd
//     and heavy on a busy mainnet Core: use ZMQ there.
//   - ZMQ (Core with -zmqpubsequence, best with -zmqpubrawtx too): on every
//     (re)connection and every ResyncInterval the mirror compares itself
//     with getrawmempool's snapshot and its mempool sequence, then applies
//     the "sequence" topic's A and R events numbered after it, removes a
//     block's transactions on C and relies on Core's A events for what a D
//     returns. An A's bytes come from the "rawtx" topic when they arrived,
//     else from the node after RawTxWait. A gap in a topic's sequence, a
//     reconnect or a malformed message causes a resync.
//
// Bounds: MaxBytes of accounted memory (serialization plus per-input,
// -output and -witness overheads, held to the real heap by a test). When a
// new transaction does not fit, the oldest are evicted and their txids
// remembered so a poll does not fetch them again. Subscribers get every
// added transaction through a buffered channel; one that falls behind
// loses transactions (Dropped counts them) and never slows the mirror.
// Transactions are numbered in the order they were added (Tx.Seq,
// LastSeq), which the P2P server uses for Core's mempool sequence rule.
//
// # What it must not do
//
// Import the node client, the P2P server or the store. The state of the
// node's mempool before the first poll or snapshot is not an error.
package mempool
