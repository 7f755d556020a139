package storecheck

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/store"
)

// ScrubHeights is how many heights one scrub step checks.
const ScrubHeights = 64

// Scrub checks the store in the background, ScrubHeights heights every
// interval from genesis to the tip, then the stale set (CheckStale), and
// over again, handing each damaged value to repair, until ctx ends. A zero
// interval turns it off.
func Scrub(ctx context.Context, st *store.Store, interval time.Duration, repair *Repairer, log zerolog.Logger) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	next := uint32(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		last, atTip, err := CheckRange(st, next, next+ScrubHeights-1, repair.OnFault)
		switch {
		case err != nil:
			if ctx.Err() == nil && !errors.Is(err, store.ErrClosed) {
				log.Warn().Err(err).Uint32("height", next).Msg("store scrub: cannot read the store here; it goes on above")
			}
			next += ScrubHeights
		case atTip:
			next = 0
			if _, err := CheckStale(st, repair.OnFault); err != nil && ctx.Err() == nil && !errors.Is(err, store.ErrClosed) {
				log.Warn().Err(err).Msg("store scrub: cannot read the stale set")
			}
		default:
			next = last + 1
		}
	}
}
