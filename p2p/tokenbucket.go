package p2p

import "time"

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
