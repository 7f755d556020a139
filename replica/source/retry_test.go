package source

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestGetHonoursRetryAfter: a source answering 503 with Retry-After (a
// cfindexd warming its catalog) is asked again after the wait it names,
// more often than Attempts, until it answers; a wait that would end after
// the call's deadline, or past MaxWait, ends the call at once with the
// error, and Retry-After parses as seconds or a date, within bounds.
func TestGetHonoursRetryAfter(t *testing.T) {
	var hits atomic.Int32
	busyFor := int32(3)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := hits.Add(1); n <= busyFor || r.URL.Path == "/always-busy" {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("manifest"))
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, Attempts: 2, BackoffMin: time.Millisecond, BackoffMax: time.Millisecond, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	got, err := c.get(context.Background(), "manifest.json", bounds{max: 100})
	if err != nil || string(got) != "manifest" {
		t.Fatalf("after three 503s: %q %v", got, err)
	}
	if took := time.Since(began); took < 3*time.Second || hits.Load() != 4 {
		t.Errorf("%d requests in %v: want 4, a second apart as Retry-After asks", hits.Load(), took)
	}

	// A deadline sooner than the wait: the error at once.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	hits.Store(0)
	began = time.Now()
	_, err = c.get(ctx, "always-busy", bounds{max: 100})
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.HasPrefix(err.Error(), "always-busy: ") {
		t.Errorf("busy past the deadline: %v", err)
	}
	if took := time.Since(began); took > 400*time.Millisecond || hits.Load() != 1 {
		t.Errorf("busy past the deadline: %d requests in %v, want 1 and no wait", hits.Load(), took)
	}

	// MaxWait spent: the error after about MaxWait.
	c2, err := New(Config{BaseURL: srv.URL, Attempts: 2, MaxWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	hits.Store(0)
	if _, err := c2.get(context.Background(), "always-busy", bounds{max: 100}); err == nil || hits.Load() != 3 {
		t.Errorf("busy past MaxWait: %d requests, %v", hits.Load(), err)
	}

	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    string
		want time.Duration
	}{
		{"", 0}, {"x", 0}, {"0", time.Second}, {"5", 5 * time.Second}, {"86400", maxRetryAfter},
		{now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), time.Second},
	} {
		if got := retryAfter(tc.h, now); got != tc.want {
			t.Errorf("Retry-After %q: %v, want %v", tc.h, got, tc.want)
		}
	}
}

// FuzzRetryAfter: no header panics, and every wait is within bounds.
func FuzzRetryAfter(f *testing.F) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, s := range []string{"", "5", "99999999999", "-1", now.Format(http.TimeFormat), "Mon, 02 Jan 2006"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		if d := retryAfter(h, now); d != 0 && (d < time.Second || d > maxRetryAfter) {
			t.Fatalf("Retry-After %q: %v", h, d)
		}
	})
}
