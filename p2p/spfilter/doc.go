// Package spfilter serves the silent-payment index (BIP-352 tweak data and
// taproot filters, docs/silent-payments.md) over P2P as an experimental
// BIP-157 filter type, FilterType, which neutrino-style clients fetch with
// the messages they already speak: getcfilters, getcfheaders and
// getcfcheckpt.
//
// It owns what the type means on the wire: the cfilter data of a block
// (AppendData, SplitData, DataCommitment), the cfheaders and cfcheckpt
// frames of the commitment chain, the service bit that advertises the
// type (ServiceFlag), and the checks that an answer covers indexed heights
// of the requested chain and nothing else. Package p2p validates requests,
// waits for stop hashes, takes filter-work slots and queues the frames
// within the send budgets; the adapter from the store's index (View)
// lives with the daemon's wiring. It must not import the store, keep
// package-level mutable state or log.
//
// # The type on the wire
//
//   - cfilter: the filter type, the block hash, and as the "filter" the
//     block's data CompactSize(len(tweak_data)) || tweak_data ||
//     taproot_filter.
//   - cfheaders: the commitment header before start (zero before the
//     index's first height) and, as the "filter hashes", each block's
//     commitment_hash = dSHA256(dSHA256(tweak_data) ||
//     dSHA256(taproot_filter)). Because the commitment chain links
//     header[h] = dSHA256(commitment_hash || header[h-1]), BIP-157's
//     header rule checks these answers unchanged; only the hash of a
//     cfilter's data differs from BIP-157's (DataCommitment, not
//     dSHA256 of the data).
//   - cfcheckpt: the commitment headers at heights 1,000, 2,000, … up to
//     the stop block, the zero hash at heights below the index's first
//     (the chain's header before its first height is zero).
//
// # Caveats
//
// The index covers the active chain only: a stop hash on a stale branch,
// or a range reaching below the index's first height or above the highest
// indexed one, is ignored (no answer), never answered from other data. A
// reorg that overtakes a getcfilters answer ends it early; the client asks
// again. A block's cfilter data may exceed the 256 KiB that btcd's wire
// package accepts in a cfilter (a block with more than about 5,800
// tweaks): a client reads this type with MaxDataSize.
package spfilter
