// Package indexer keeps the store equal to the node's active chain.
//
// A Follower owns the loop that an operator starts once and forgets: it
// catches up from genesis (or from the store's tip), follows new tips,
// rolls back reorgs up to a safety depth and retries through node
// restarts. It never trusts a notification: ZMQ messages and poll ticks
// only wake it, and each round re-reads the truth from the node over RPC.
//
// One round (sync):
//
//  1. Ask the node for its best block. Equal to the store's tip: done.
//  2. Find the highest height where the store and the node agree (a binary
//     search over getblockhash; agreement at h implies agreement below h).
//     Below the store's tip, the blocks above it are disconnected when the
//     new branch is written (below); their filters stay retrievable by
//     hash.
//  3. Fetch the missing blocks with their spent scripts through a pool of
//     workers (each with its own reusable filter builder) — in runs of
//     consecutive blocks with one request per run when the source can
//     (prevouts.RunBlockSource) — build their BIP-158 basic filters in
//     parallel, and hand them to a single committer that restores height
//     order, checks every block links to the one before it, chains the
//     filter headers and commits batches in which the tip moves with the
//     filters, filter headers and block headers it covers.
//
// A reorg is written as one store transaction (store.Reorg) that
// disconnects the old branch and connects the new one once the new branch
// has more work (summed from each header's target, as neutrino does):
// readers such as light clients never see the fork point, or a new tip with
// less work than the old, in between.
//
// Reorg safety (follower.go, work.go):
//
//   - While the node's chain has no more work than the indexed one (it is
//     between the disconnects and the connects of a reorg, or blocks were
//     invalidated), nothing is written and the round ends; the follower
//     re-checks at each poll and when Config.ReorgSettle runs out. The
//     store follows the node onto a chain with less work only once the
//     node has stayed on such a chain for ReorgSettle.
//   - A reorg deeper than Config.ReorgSafetyDepth ends Run with
//     ErrDeepReorg, and a node whose chain shares only the genesis block
//     with more than six indexed blocks (its data was wiped) with
//     ErrChainVanished, both saying how to go on (--reindex, or
//     allowdeepreorg), unless Config.AllowDeepReorg. A node whose tip is an
//     indexed block that deep (reindexing, syncing) is waited for with one
//     warning and never followed down.
//   - Reorgs deeper than six blocks are logged at warn level.
//
// A link that does not hold (the node reorganised while we fetched) ends
// the round early; the next round finds the new fork. The number of blocks
// in flight is bounded, so memory does not grow with the distance to the
// tip. The Observer hears what the round did, for metrics and readiness.
//
// It keeps no chain state of its own beyond the round in flight; the one
// ordering it promises a source is that runs get their turns
// (prevouts.RunOrder) in chain order. It must not talk to peers or serve
// anything: it only writes the store. The BIP-158 element rules are gcs's.
package indexer
