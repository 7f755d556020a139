package main

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/metrics"
	"github.com/cfindexd/cfindexd/store"
)

// repairRetry is how long a height whose repair failed (the node
// unreachable, a neighbour that needs repair first) waits for the next
// attempt.
const repairRetry = 5 * time.Second

// rebuildFunc rebuilds the filter of the block hash at height from the
// node (indexer.Follower.RebuildFilter).
type rebuildFunc func(ctx context.Context, height uint32, hash chainhash.Hash) ([]byte, error)

// storeRepairer hears of every stored value that fails its checksum
// (store.Options.OnMismatch): it logs each once at ERROR with its height,
// counts it, and repairs it from the node: the running follower rebuilds
// the block's filter and the store rewrites the height once that fits the
// stored filter-header chain. Until then readers get the height as not
// found, which the servers answer as for a block they do not have.
type storeRepairer struct {
	metrics *metrics.Metrics
	log     zerolog.Logger
	st      *store.Store // set once, before run

	mu      sync.Mutex
	pending map[uint32]bool // active heights logged, not yet repaired
	stale   map[string]bool // damaged stale blocks logged (not repaired)
	rebuild rebuildFunc     // nil while no follower runs
	wake    chan struct{}
}

func newStoreRepairer(m *metrics.Metrics, log zerolog.Logger) *storeRepairer {
	return &storeRepairer{
		metrics: m, log: log.With().Str("component", "store").Logger(),
		pending: make(map[uint32]bool), stale: make(map[string]bool),
		wake: make(chan struct{}, 1),
	}
}

// onMismatch is store.Options.OnMismatch: it must not block.
func (r *storeRepairer) onMismatch(m *store.MismatchError) {
	r.mu.Lock()
	if m.Stale {
		if r.stale[m.What] {
			r.mu.Unlock()
			return
		}
		r.stale[m.What] = true
	} else {
		if r.pending[m.Height] {
			r.mu.Unlock()
			return
		}
		r.pending[m.Height] = true
	}
	r.mu.Unlock()
	r.metrics.StoreChecksumMismatch()
	if m.Stale {
		r.log.Error().Uint32("height", m.Height).Str("value", m.What).
			Msg("stored value is damaged: not served (a block of the stale set, which is not repaired; reindex to rebuild it)")
		return
	}
	r.log.Error().Uint32("height", m.Height).Str("value", m.What).
		Msg("stored value is damaged: not served until repaired from the node")
	r.poke()
}

// onFault takes a fault the scrub found as onMismatch takes one a read
// met (a value failing its CRC it has already heard of from the read).
func (r *storeRepairer) onFault(f storeFault) {
	r.onMismatch(&store.MismatchError{Height: f.Height, What: f.What})
}

func (r *storeRepairer) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// attach sets the function that rebuilds filters (nil: none now).
func (r *storeRepairer) attach(fn rebuildFunc) {
	r.mu.Lock()
	r.rebuild = fn
	r.mu.Unlock()
	if fn != nil {
		r.poke()
	}
}

// run repairs pending heights, lowest first, whenever a follower runs,
// until ctx ends.
func (r *storeRepairer) run(ctx context.Context) {
	retry := time.NewTimer(repairRetry)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-retry.C:
		}
		retry.Reset(repairRetry)
		for _, h := range r.todo() {
			if ctx.Err() != nil {
				return
			}
			r.repair(ctx, h)
		}
	}
}

// todo returns the pending heights, lowest first, or none while no
// follower runs.
func (r *storeRepairer) todo() []uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rebuild == nil {
		return nil
	}
	out := make([]uint32, 0, len(r.pending))
	for h := range r.pending {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

// repair rebuilds and rewrites height h; a failure leaves it pending.
func (r *storeRepairer) repair(ctx context.Context, h uint32) {
	r.mu.Lock()
	rebuild := r.rebuild
	r.mu.Unlock()
	if rebuild == nil {
		return
	}
	hash, err := r.st.HashAt(h)
	if errors.Is(err, store.ErrNotFound) {
		r.done(h) // no longer on the active chain
		return
	}
	if err == nil {
		var filter []byte
		if filter, err = rebuild(ctx, h, hash); err == nil {
			err = r.st.Repair(h, hash, filter)
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn().Err(err).Uint32("height", h).Dur("retry_in", repairRetry).Msg("repairing a stored filter failed")
		}
		return
	}
	r.done(h)
	r.metrics.StoreRepaired()
	r.log.Info().Uint32("height", h).Str("block", hash.String()).
		Msg("repaired: filter rebuilt from the node, checked against the filter-header chain and rewritten; served again")
}

func (r *storeRepairer) done(h uint32) {
	r.mu.Lock()
	delete(r.pending, h)
	r.mu.Unlock()
}
