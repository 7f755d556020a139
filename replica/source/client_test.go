package source

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func testClient(t *testing.T, url string, maxFilters int64) *Client {
	t.Helper()
	c, err := New(Config{BaseURL: url, Attempts: 3, BackoffMin: time.Millisecond, BackoffMax: 2 * time.Millisecond, Timeout: 10 * time.Second, MaxFiltersObject: maxFilters})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGetBounds: a hostile or broken source costs what it sends, never
// what it declares, and each failure is final or retried as it should be.
func TestGetBounds(t *testing.T) {
	var hits atomic.Int32
	body := strings.Repeat("x", 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		switch r.URL.Path {
		case "/declares-huge":
			w.Header().Set("Content-Length", strconv.Itoa(1<<40))
			w.WriteHeader(200)
		case "/streams-too-much": // no length: chunked
			for range 200 {
				_, _ = w.Write([]byte(body))
				w.(http.Flusher).Flush()
			}
		case "/flaky":
			if n%2 == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte(body))
		case "/short":
			_, _ = w.Write([]byte(body[:10]))
		case "/ok":
			_, _ = w.Write([]byte(body))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c := testClient(t, srv.URL+"/", 50_000)
	ctx := context.Background()
	tests := []struct {
		name   string
		b      bounds
		want   error
		visits int32
	}{
		{"declares-huge", bounds{max: 50_000}, ErrTooLarge, 1},
		{"streams-too-much", bounds{max: 50_000}, ErrTooLarge, 1},
		{"missing", bounds{max: 50_000}, ErrNotFound, 1},
		{"short", bounds{exact: 1000}, ErrSize, 1},
		{"flaky", bounds{max: 50_000}, nil, 2},
		{"ok", bounds{exact: 1000}, nil, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hits.Store(0)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			got, err := c.get(ctx, tc.name, tc.b)
			runtime.ReadMemStats(&after)
			if tc.want == nil {
				if err != nil || string(got) != body {
					t.Fatalf("%d bytes, %v", len(got), err)
				}
			} else if !errors.Is(err, tc.want) || !strings.HasPrefix(err.Error(), tc.name+": ") {
				t.Fatalf("err %v, want %v naming the object", err, tc.want)
			}
			if n := hits.Load(); n != tc.visits {
				t.Fatalf("%d requests, want %d", n, tc.visits)
			}
			if a := after.TotalAlloc - before.TotalAlloc; a > 1<<20 {
				t.Fatalf("%d bytes allocated", a)
			}
		})
	}
	// A hash mismatch names the object and both digests.
	_, err := c.getVerified(ctx, "ok", bounds{exact: 1000}, Digest(sha256.Sum256([]byte("other"))))
	if !errors.Is(err, ErrHashMismatch) || !strings.HasPrefix(err.Error(), "ok: sha256 mismatch: the object hashes to ") {
		t.Fatalf("err %v", err)
	}
}

func TestNewRefusesBadURLs(t *testing.T) {
	for _, u := range []string{"", "ftp://x/y", "http://", "http://x/y?z=1", "x:80", "http://x/#f"} {
		if _, err := New(Config{BaseURL: u}); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
}
