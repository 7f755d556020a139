package peerpolicy

import (
	"testing"
	"time"
)

// The bucket starts full, refuses once empty, and refills at its rate up
// to its burst.
func TestTokenBucket(t *testing.T) {
	b := TokenBucket{Rate: 10, Burst: 5}
	now := time.Unix(1_700_000_000, 0)
	for i := range 5 {
		if !b.Take(now) {
			t.Fatalf("take %d of a full bucket refused", i)
		}
	}
	if b.Take(now) {
		t.Fatal("empty bucket gave a token")
	}
	if !b.Take(now.Add(100*time.Millisecond)) || b.Take(now.Add(100*time.Millisecond)) {
		t.Fatal("0.1 s at 10/s should give exactly one token")
	}
	later := now.Add(time.Hour)
	n := 0
	for b.Take(later) {
		n++
	}
	if n != 5 {
		t.Fatalf("%d tokens after an hour, want the burst 5", n)
	}
}
