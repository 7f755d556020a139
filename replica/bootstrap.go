package replica

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/netparams"
	"github.com/cfindexd/cfindexd/replica/source"
	"github.com/cfindexd/cfindexd/store"
)

// DefaultFetchAhead is how many ranges Bootstrap fetches ahead of the one
// it checks and commits.
const DefaultFetchAhead = 3

// BootstrapConfig configures Bootstrap.
type BootstrapConfig struct {
	Source  *source.Client
	Store   *store.Store
	Network netparams.Network
	// FetchAhead: ranges fetched while one is checked and committed
	// (DefaultFetchAhead when zero); each holds one range's objects in
	// memory.
	FetchAhead int
	// OnCommit, if set, is called after each committed range with the
	// store's new tip and its block's time.
	OnCommit func(tip store.Tip, blockTime time.Time)
	Log      zerolog.Logger
}

// BootstrapResult says what Bootstrap did.
type BootstrapResult struct {
	// Published is the source's newest range (latest).
	Published source.Latest
	// Committed is the number of heights committed; Ranges the number of
	// ranges they came from.
	Committed, Ranges int
	// Tip is the store's tip at the end; false if the store is empty (a
	// source with no range yet).
	Tip    store.Tip
	HasTip bool
}

// Bootstrap fills the store from the source's published ranges, from the
// store's tip (so a restart after a crash resumes, and a replica that
// followed its primary past the published ranges commits nothing), up to
// the newest range the source's latest names. Each range is checked
// (checkRange) before any of it is committed, in one transaction per
// range. The first error stops it, naming the object; what was committed
// before stays, checked.
func Bootstrap(ctx context.Context, cfg BootstrapConfig) (BootstrapResult, error) {
	var res BootstrapResult
	latest, m, err := cfg.Source.Snapshot(ctx)
	if err != nil {
		return res, err
	}
	res.Published = latest
	nw := cfg.Network
	if m.Network != nw.Name || m.Genesis != *nw.Params.GenesisHash {
		return res, fmt.Errorf("%s: %w: the source is network %q with genesis %s; this replica follows %s with genesis %s",
			source.ManifestName, ErrWrongNetwork, m.Network, m.Genesis, nw.Name, nw.Params.GenesisHash)
	}
	next := uint32(0)
	if tip, ok := cfg.Store.Tip(); ok {
		next = tip.Height + 1
	}
	first := int(next / source.RangeSize)
	if first >= len(m.Ranges) {
		res.Tip, res.HasTip = cfg.Store.Tip()
		cfg.Log.Info().Uint32("store_next", next).Uint32("published_end", latest.End).Msg("replica bootstrap: the store already holds every published range")
		return res, nil
	}
	todo := m.Ranges[first:]
	cfg.Log.Info().Uint32("from_height", next).Uint32("to_height", latest.End).Int("ranges", len(todo)).
		Str("source", cfg.Source.BaseURL()).Msg("replica bootstrap: fetching and checking published ranges")
	hc := newHeaderChecker(nw.Params, cfg.Store.HeaderAt)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fetched := fetchAhead(ctx, cfg.Source, todo, max(cfg.FetchAhead, 1))
	started := time.Now()
	for range todo {
		ch, ok := <-fetched
		if !ok {
			return res, ctx.Err()
		}
		f := <-ch
		if f.err != nil {
			return res, f.err
		}
		n, err := commitRange(cfg.Store, hc, &f.ro, next)
		if err != nil {
			return res, err
		}
		next += uint32(n)
		res.Committed += n
		res.Ranges++
		tip, _ := cfg.Store.Tip()
		if cfg.OnCommit != nil {
			hdr, err := cfg.Store.HeaderAt(tip.Height)
			if err == nil {
				cfg.OnCommit(tip, hdr.Timestamp)
			}
		}
		cfg.Log.Debug().Uint32("range", f.ro.Range.Start).Uint32("tip", tip.Height).Msg("replica bootstrap: range committed")
	}
	res.Tip, res.HasTip = cfg.Store.Tip()
	cfg.Log.Info().Int("heights", res.Committed).Int("ranges", res.Ranges).Uint32("tip", res.Tip.Height).
		Stringer("took", time.Since(started).Round(time.Millisecond)).Msg("replica bootstrap: done")
	return res, nil
}

// commitRange checks ro from the stored block below it and commits its
// heights from next on (the store may already hold its lower heights, which
// must be the same blocks). It returns the number of heights committed.
func commitRange(st *store.Store, hc *headerChecker, ro *source.RangeObjects, next uint32) (int, error) {
	start := ro.Range.Start
	var prev anchor
	if start > 0 {
		var err error
		if prev, err = storedAnchor(st, start-1); err != nil {
			return 0, fmt.Errorf("%s: %w", source.HeadersName(start), err)
		}
	}
	recs, err := checkRange(hc, ro, prev)
	if err != nil {
		return 0, err
	}
	if next > start {
		// The store holds heights start..next-1: they must be these blocks.
		held, err := st.HashAt(next - 1)
		if err != nil {
			return 0, fmt.Errorf("read stored block %d: %w", next-1, err)
		}
		if want := recs[next-1-start].Hash; held != want {
			return 0, fmt.Errorf("%s: %w: height %d is block %s, the store holds %s", source.HeadersName(start), ErrConflict, next-1, want, held)
		}
		recs = recs[next-start:]
	}
	if err := st.CommitBatch(recs); err != nil {
		return 0, fmt.Errorf("commit range %d: %w", start, err)
	}
	return len(recs), nil
}

// storedAnchor reads the stored block at height h.
func storedAnchor(st *store.Store, h uint32) (anchor, error) {
	hash, err := st.HashAt(h)
	if err != nil {
		return anchor{}, fmt.Errorf("read stored block %d: %w", h, err)
	}
	fhs, err := st.FilterHeadersByHeight(h, h)
	if err != nil {
		return anchor{}, fmt.Errorf("read stored filter header %d: %w", h, err)
	}
	return anchor{Hash: hash, FilterHeader: fhs[0]}, nil
}

// fetchedRange is one range's objects or the error fetching them.
type fetchedRange struct {
	ro  source.RangeObjects
	err error
}

// fetchAhead fetches ranges in order, up to ahead at once beyond the one
// being consumed, and delivers them in order: one channel per range, each
// answered once. It stops when ctx ends.
func fetchAhead(ctx context.Context, src *source.Client, ranges []source.Range, ahead int) <-chan chan fetchedRange {
	out := make(chan chan fetchedRange, ahead)
	go func() {
		defer close(out)
		for i := range ranges {
			ch := make(chan fetchedRange, 1)
			select {
			case out <- ch:
			case <-ctx.Done():
				return
			}
			r := ranges[i]
			go func() {
				ro, err := src.FetchRange(ctx, r)
				ch <- fetchedRange{ro: ro, err: err}
			}()
		}
	}()
	return out
}
