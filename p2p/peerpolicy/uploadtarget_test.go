package peerpolicy

import (
	"testing"
	"time"
)

func TestUploadTargetWindow(t *testing.T) {
	u := NewUploadTarget(1000)
	now := time.Unix(1_700_000_000, 0)
	u.Add(600, now)
	u.Add(300, now.Add(time.Hour))
	if u.Reached(now.Add(2 * time.Hour)) {
		t.Fatal("900 of 1000 reached")
	}
	u.Add(100, now.Add(3*time.Hour))
	if !u.Reached(now.Add(3 * time.Hour)) {
		t.Fatal("1000 of 1000 not reached")
	}
	// The first 600 leave the window a day later; the rest stays.
	if got := u.Served(now.Add(24*time.Hour + time.Minute)); got != 400 {
		t.Fatalf("served %d in the window a day later, want 400", got)
	}
	if u.Reached(now.Add(24*time.Hour + time.Minute)) {
		t.Fatal("target still reached after the window slid")
	}
	if got := u.Served(now.Add(30 * 24 * time.Hour)); got != 0 {
		t.Fatalf("served %d a month later", got)
	}
	if NewUploadTarget(0).Reached(now) {
		t.Fatal("target 0 (unlimited) reached")
	}
}
