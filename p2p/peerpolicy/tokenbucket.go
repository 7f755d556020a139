package peerpolicy

import (
	"sync"
	"time"
)

// TokenBucket allows rate events per second on average and bursts of up to
// burst. Its zero time starts it full. Not safe for concurrent use (a
// peer's reader owns it).
type TokenBucket struct {
	Rate, Burst float64
	tokens      float64
	last        time.Time
}

// Take spends one token at now and reports whether there was one.
func (b *TokenBucket) Take(now time.Time) bool {
	if b.last.IsZero() {
		b.tokens = b.Burst
	} else if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = min(b.Burst, b.tokens+dt*b.Rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// fullAt reports whether the bucket has refilled to its burst by now, so
// that a fresh bucket would behave the same.
func (b *TokenBucket) fullAt(now time.Time) bool {
	if b.last.IsZero() {
		return true
	}
	return b.tokens+now.Sub(b.last).Seconds()*b.Rate >= b.Burst
}

// SharedBucket is a TokenBucket safe for concurrent use: the server-wide
// transaction relay rate that every peer's reader draws from.
type SharedBucket struct {
	mu sync.Mutex
	b  TokenBucket
}

func NewSharedBucket(rate, burst float64) *SharedBucket {
	return &SharedBucket{b: TokenBucket{Rate: rate, Burst: burst}}
}

// Take spends one token at now and reports whether there was one.
func (s *SharedBucket) Take(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Take(now)
}
