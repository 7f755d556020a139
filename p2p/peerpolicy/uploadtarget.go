package peerpolicy

import (
	"sync"
	"time"
)

// Upload target window, as Bitcoin Core's -maxuploadtarget: bytes served in
// the last 24 hours, counted in hourly buckets so that the window slides
// rather than resets once a day.
const (
	uploadWindow  = 24 * time.Hour
	uploadBuckets = 24
	// HistoricalBlockAge is Core's HISTORICAL_BLOCK_AGE: blocks this much
	// older than the tip are "historical" and refused once the target is
	// reached; newer blocks are always served.
	HistoricalBlockAge = 7 * 24 * time.Hour
)

// UploadTarget counts block bytes served over a sliding 24-hour window
// against a limit (0 = unlimited). Safe for concurrent use.
type UploadTarget struct {
	limit int64

	mu      sync.Mutex
	buckets [uploadBuckets]int64
	// hour is the index (unix time / bucket length) of the newest bucket.
	hour int64
}

func NewUploadTarget(limit int64) *UploadTarget { return &UploadTarget{limit: limit} }

// advance moves the window to now, clearing buckets that fell out of it.
func (u *UploadTarget) advance(now time.Time) {
	h := now.UnixNano() / int64(uploadWindow/uploadBuckets)
	if h <= u.hour {
		return
	}
	if h-u.hour >= uploadBuckets {
		clear(u.buckets[:])
	} else {
		for i := u.hour + 1; i <= h; i++ {
			u.buckets[i%uploadBuckets] = 0
		}
	}
	u.hour = h
}

// Add counts n bytes served at now.
func (u *UploadTarget) Add(n int, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.advance(now)
	u.buckets[u.hour%uploadBuckets] += int64(n)
}

// Served returns the bytes served in the 24 hours up to now.
func (u *UploadTarget) Served(now time.Time) int64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.advance(now)
	var sum int64
	for _, b := range u.buckets {
		sum += b
	}
	return sum
}

// Reached reports whether the target is set and the window has served it.
func (u *UploadTarget) Reached(now time.Time) bool {
	return u.limit > 0 && u.Served(now) >= u.limit
}
