package indexer

import "errors"

// Sentinel errors that end Run: no retry can fix them, the operator has to
// act, and the error's text says how.
var (
	// ErrChainMismatch means the store and the node do not share even the
	// genesis block: the node was switched to another network while
	// cfindexd ran (at start, the same condition is
	// nodeclient.ErrWrongNetwork).
	ErrChainMismatch = errors.New("store and node share no block")

	// ErrDeepReorg means the node's active chain leaves the indexed chain
	// more than Config.ReorgSafetyDepth blocks below the indexed tip and
	// Config.AllowDeepReorg is off.
	ErrDeepReorg = errors.New("reorg deeper than reorgsafetydepth")

	// ErrChainVanished means the node's active chain shares only the
	// genesis block with an indexed chain more than a few blocks long —
	// a node whose data was wiped or replaced (btcd --regtest starts an
	// empty chain on every restart) — and Config.AllowDeepReorg is off.
	ErrChainVanished = errors.New("node's chain shares only the genesis block with the index")
)

// errLinkBroken ends a round early when a fetched block does not build on
// the block before it: the node reorganised while the round fetched. The
// next round finds the new fork.
var errLinkBroken = errors.New("fetched block does not extend the chain")

// errLowerWork ends a round that fetched the node's branch and found no
// more work in it than in the indexed branch it would replace: the node is
// in the middle of a reorg (or was told to invalidate blocks). Nothing is
// written; the follower re-checks at the next poll.
var errLowerWork = errors.New("node's branch has no more work than the indexed one")
