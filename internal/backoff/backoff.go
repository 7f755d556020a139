package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff yields capped exponential delays with jitter for retrying node
// calls: attempt n waits a random duration in [d/2, d) where
// d = min(Max, Min·2ⁿ). The random source is injected so tests are
// deterministic. Not safe for concurrent use; give each retry loop its own.
type Backoff struct {
	Min, Max time.Duration
	Rand     *rand.Rand
	attempt  int
}

// New returns a Backoff from min to max using r for jitter (nil: a
// source seeded from the clock).
func New(min, max time.Duration, r *rand.Rand) *Backoff {
	if r == nil {
		now := uint64(time.Now().UnixNano())
		r = rand.New(rand.NewPCG(now, now>>32|1))
	}
	if min <= 0 {
		min = 100 * time.Millisecond
	}
	if max < min {
		max = min
	}
	return &Backoff{Min: min, Max: max, Rand: r}
}

// Next returns the delay before the next attempt and advances the attempt
// counter.
func (b *Backoff) Next() time.Duration {
	d := b.Max
	if b.attempt < 62 {
		if step := b.Min << b.attempt; step > 0 && step < b.Max {
			d = step
		}
	}
	b.attempt++
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + time.Duration(b.Rand.Int64N(int64(d-half)))
}

// Reset starts over from Min after a success.
func (b *Backoff) Reset() { b.attempt = 0 }

// Wait sleeps for Next() or until ctx is done, returning ctx.Err() then.
func (b *Backoff) Wait(ctx context.Context) error {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
