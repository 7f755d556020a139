package storecheck

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/store"
)

// repairRetry is how long a height whose repair failed (the node
// unreachable, a neighbour that needs repair first) waits for the next
// attempt.
const repairRetry = 5 * time.Second

// RebuildFunc fetches the block hash, at height, from the node again and
// returns its header and rebuilt filter (indexer.Follower.RebuildBlock).
type RebuildFunc func(ctx context.Context, height uint32, hash chainhash.Hash) (wire.BlockHeader, []byte, error)

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
// counts it, and repairs it from the node: the running follower fetches
// the block again (the one the chain names at the height, when its stored
// hash or header is the damaged value) and the store rewrites the height's
// header and filter once they fit the stored chains. A damaged height
// index entry is rebuilt from the checked headers, without the node. Until
// then readers get the block as not found, which the servers answer as for
// a block they do not have.
type Repairer struct {
	obs Observer
	log zerolog.Logger
	st  *store.Store // set once, by Run

	mu      sync.Mutex
	pending map[uint32]bool         // active heights logged, not yet repaired
	index   map[chainhash.Hash]bool // height index entries logged, not yet repaired
	stale   map[string]bool         // damaged stale blocks logged (not repaired)
	rebuild RebuildFunc             // nil while no follower runs
	wake    chan struct{}
}

// NewRepairer returns a Repairer that counts through obs and logs to log.
func NewRepairer(obs Observer, log zerolog.Logger) *Repairer {
	return &Repairer{
		obs: obs, log: log.With().Str("component", "store").Logger(),
		pending: make(map[uint32]bool), stale: make(map[string]bool), index: make(map[chainhash.Hash]bool),
		wake: make(chan struct{}, 1),
	}
}

// OnMismatch is store.Options.OnMismatch: it must not block.
func (r *Repairer) OnMismatch(m *store.MismatchError) {
	r.mu.Lock()
	switch {
	case m.Stale:
		if r.stale[m.What] {
			r.mu.Unlock()
			return
		}
		r.stale[m.What] = true
	case m.HeightIndex:
		if r.index[m.Hash] {
			r.mu.Unlock()
			return
		}
		r.index[m.Hash] = true
	default:
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
	ev := r.log.Error().Uint32("height", m.Height).Str("value", m.What)
	if m.HeightIndex {
		ev = ev.Str("block", m.Hash.String())
	}
	ev.Msg("stored value is damaged: not served until repaired")
	r.poke()
}

// OnFault takes a fault the scrub found as OnMismatch takes one a read
// met (a value failing its CRC it has already heard of from the read).
func (r *Repairer) OnFault(f Fault) {
	r.OnMismatch(&store.MismatchError{Height: f.Height, Hash: f.Hash, What: f.What, Stale: f.Stale})
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
		r.repairIndex()
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
	if errors.Is(err, store.ErrChecksumMismatch) {
		hash, err = st.ChainedHashAt(h) // the hash or header is the damage
	}
	if errors.Is(err, store.ErrNotFound) {
		r.done(h) // no longer on the active chain
		return
	}
	if err == nil {
		var (
			header wire.BlockHeader
			filter []byte
		)
		if header, filter, err = rebuild(ctx, h, hash); err == nil {
			err = st.Repair(h, header, filter)
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
		Msg("repaired: block fetched from the node again, its header and rebuilt filter checked against the stored chains and rewritten; served again")
}

func (r *Repairer) done(h uint32) {
	r.mu.Lock()
	delete(r.pending, h)
	r.mu.Unlock()
}

// repairIndex rebuilds the damaged height index entries logged so far.
func (r *Repairer) repairIndex() {
	r.mu.Lock()
	st := r.st
	hashes := make([]chainhash.Hash, 0, len(r.index))
	for hash := range r.index {
		hashes = append(hashes, hash)
	}
	r.mu.Unlock()
	for _, hash := range hashes {
		if err := st.RepairHeightIndex(hash); err != nil {
			r.log.Warn().Err(err).Str("block", hash.String()).Dur("retry_in", repairRetry).Msg("repairing a height index entry failed")
			continue
		}
		r.mu.Lock()
		delete(r.index, hash)
		r.mu.Unlock()
		r.obs.StoreRepaired()
		r.log.Info().Str("block", hash.String()).Msg("repaired: height index entry rebuilt from the checked headers; served again")
	}
}
