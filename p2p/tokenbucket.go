package p2p

import (
	"sync"
	"time"
)

// tokenBucket allows rate events per second on average and bursts of up to
// burst. Its zero time starts it full. Not safe for concurrent use (a
// peer's reader owns it).
type tokenBucket struct {
	rate, burst float64
	tokens      float64
	last        time.Time
}

// take spends one token at now and reports whether there was one.
func (b *tokenBucket) take(now time.Time) bool {
	if b.last.IsZero() {
		b.tokens = b.burst
	} else if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = min(b.burst, b.tokens+dt*b.rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// sharedBucket is a tokenBucket safe for concurrent use: the server-wide
// transaction relay rate that every peer's reader draws from.
type sharedBucket struct {
	mu sync.Mutex
	b  tokenBucket
}

func newSharedBucket(rate, burst float64) *sharedBucket {
	return &sharedBucket{b: tokenBucket{rate: rate, burst: burst}}
}

// take spends one token at now and reports whether there was one.
func (s *sharedBucket) take(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.take(now)
}
