package peerpolicy

import (
	"context"
	"sync"
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

// CoarseClock is a Clock read with one atomic load: Start advances it
// every tick from the monotonic clock, so a read costs nothing next to a
// grant while decayed service, whose half-lives are seconds, loses nothing
// that matters. Until Start, and after its context ends, the clock stands
// still. Safe for concurrent use.
type CoarseClock struct {
	origin  time.Time
	elapsed atomic.Int64 // nanoseconds since origin
}

// NewCoarseClock returns a clock standing at zero.
func NewCoarseClock() *CoarseClock { return &CoarseClock{origin: time.Now()} }

// Now returns the time elapsed since the clock was made, as of its last
// tick.
func (c *CoarseClock) Now() time.Duration { return time.Duration(c.elapsed.Load()) }

// Start advances the clock now and every tick until ctx ends, from a
// timer: no goroutine of its own waits between ticks.
func (c *CoarseClock) Start(ctx context.Context, tick time.Duration) {
	c.advance()
	var mu sync.Mutex // orders the timer's reset against its stop
	mu.Lock()
	defer mu.Unlock()
	var t *time.Timer
	t = time.AfterFunc(tick, func() {
		c.advance()
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() == nil {
			t.Reset(tick)
		}
	})
	context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		t.Stop()
	})
}

func (c *CoarseClock) advance() { c.elapsed.Store(int64(time.Since(c.origin))) }
