package indexer

import "errors"

// ErrChainMismatch means the store and the node do not share even the
// genesis block, which only happens when a store of another network was
// opened against this node. It is fatal.
var ErrChainMismatch = errors.New("store and node share no block")

// errLinkBroken ends a round early when a fetched block does not build on
// the block before it: the node reorganised while the round fetched. The
// next round finds the new fork.
var errLinkBroken = errors.New("fetched block does not extend the chain")
