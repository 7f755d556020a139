package storecheck

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/store"
)

// repairRetry is how long a height whose repair failed (the node
// unreachable, a neighbour that needs repair first) waits for the next
// attempt.
const repairRetry = 5 * time.Second

// RebuildFunc rebuilds the filter of the block hash at height from the
// node (indexer.Follower.RebuildFilter).
type RebuildFunc func(ctx context.Context, height uint32, hash chainhash.Hash) ([]byte, error)

// Observer counts what the Repairer sees (the metrics package implements
// it).
type Observer interface {
	// StoreChecksumMismatch counts a damaged value, once per height.
	StoreChecksumMismatch()
	// StoreRepaired counts a height rewritten from the node.
	StoreRepaired()
}

// Repairer hears of every stored value that fails its checksum
// (store.Options.OnMismatch): it logs each once at ERROR with its height,
// counts it, and repairs it from the node: the running follower rebuilds
// the block's filter and the store rewrites the height once that fits the
// stored filter-header chain. Until then readers get the height as not
// found, which the servers answer as for a block they do not have.
type Repairer struct {
	obs Observer
	log zerolog.Logger
	st  *store.Store // set once, by Run

	mu      sync.Mutex
	pending map[uint32]bool // active heights logged, not yet repaired
	stale   map[string]bool // damaged stale blocks logged (not repaired)
	rebuild RebuildFunc     // nil while no follower runs
	wake    chan struct{}
}

// NewRepairer returns a Repairer that counts through obs and logs to log.
func NewRepairer(obs Observer, log zerolog.Logger) *Repairer {
	return &Repairer{
		obs: obs, log: log.With().Str("component", "store").Logger(),
		pending: make(map[uint32]bool), stale: make(map[string]bool),
		wake: make(chan struct{}, 1),
	}
}

// OnMismatch is store.Options.OnMismatch: it must not block.
func (r *Repairer) OnMismatch(m *store.MismatchError) {
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
	r.obs.StoreChecksumMismatch()
	if m.Stale {
		r.log.Error().Uint32("height", m.Height).Str("value", m.What).
			Msg("stored value is damaged: not served (a block of the stale set, which is not repaired; reindex to rebuild it)")
		return
	}
	r.log.Error().Uint32("height", m.Height).Str("value", m.What).
		Msg("stored value is damaged: not served until repaired from the node")
	r.poke()
}

// OnFault takes a fault the scrub found as OnMismatch takes one a read
// met (a value failing its CRC it has already heard of from the read).
func (r *Repairer) OnFault(f Fault) {
	r.OnMismatch(&store.MismatchError{Height: f.Height, What: f.What})
}

func (r *Repairer) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Attach sets the function that rebuilds filters (nil: none now).
func (r *Repairer) Attach(fn RebuildFunc) {
	r.mu.Lock()
	r.rebuild = fn
	r.mu.Unlock()
	if fn != nil {
		r.poke()
	}
}

// Run repairs pending heights of st, lowest first, whenever a rebuild
// function is attached, until ctx ends. st must be the store whose
// Options.OnMismatch is r.OnMismatch.
func (r *Repairer) Run(ctx context.Context, st *store.Store) {
	r.mu.Lock()
	r.st = st
	r.mu.Unlock()
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
func (r *Repairer) todo() []uint32 {
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
func (r *Repairer) repair(ctx context.Context, h uint32) {
	r.mu.Lock()
	rebuild, st := r.rebuild, r.st
	r.mu.Unlock()
	if rebuild == nil {
		return
	}
	hash, err := st.HashAt(h)
	if errors.Is(err, store.ErrNotFound) {
		r.done(h) // no longer on the active chain
		return
	}
	if err == nil {
		var filter []byte
		if filter, err = rebuild(ctx, h, hash); err == nil {
			err = st.Repair(h, hash, filter)
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn().Err(err).Uint32("height", h).Dur("retry_in", repairRetry).Msg("repairing a stored filter failed")
		}
		return
	}
	r.done(h)
	r.obs.StoreRepaired()
	r.log.Info().Uint32("height", h).Str("block", hash.String()).
		Msg("repaired: filter rebuilt from the node, checked against the filter-header chain and rewritten; served again")
}

func (r *Repairer) done(h uint32) {
	r.mu.Lock()
	delete(r.pending, h)
	r.mu.Unlock()
}
