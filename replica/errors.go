package replica

import "errors"

// Errors callers act on.
var (
	// ErrWrongNetwork: the source or the primary is of another network.
	ErrWrongNetwork = errors.New("wrong network")
	// ErrInvalidChain: headers or filters break the chain's rules (links,
	// proof of work, difficulty, the filter-header chain).
	ErrInvalidChain = errors.New("invalid chain")
	// ErrConflict: published ranges disagree with what the store holds.
	ErrConflict = errors.New("source conflicts with the store")
	// ErrDeepReorg: the primary reorganised deeper than the safety depth.
	ErrDeepReorg = errors.New("reorg deeper than reorgsafetydepth")
)
