package peerpolicy

import (
	"context"
	"sync/atomic"
	"time"
)

// Clock is a monotonic clock for service accounting: the time elapsed
// since an origin of its own.
type Clock func() time.Duration

// WallClock is the Clock that reads now at every call.
func WallClock(now func() time.Time) Clock {
	origin := now()
	return func() time.Duration { return now().Sub(origin) }
}

// CoarseClock is a Clock read with one atomic load: Run advances it every
// tick from the monotonic clock, so a read costs nothing next to a grant
// while decayed service, whose half-lives are seconds, loses nothing that
// matters. Until Run starts, and after it returns, the clock stands still.
// Safe for concurrent use.
type CoarseClock struct {
	origin  time.Time
	elapsed atomic.Int64 // nanoseconds since origin
}

// NewCoarseClock returns a clock standing at zero.
func NewCoarseClock() *CoarseClock { return &CoarseClock{origin: time.Now()} }

// Now returns the time elapsed since the clock was made, as of its last
// tick.
func (c *CoarseClock) Now() time.Duration { return time.Duration(c.elapsed.Load()) }

// Run advances the clock every tick until ctx ends.
func (c *CoarseClock) Run(ctx context.Context, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		c.elapsed.Store(int64(time.Since(c.origin)))
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}
