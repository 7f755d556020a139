package nodeclient

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A node that turns requests away as busy (btcd at rpcmaxclients, Core
// with a full work queue) is asked again after a short wait: a burst of
// busy answers does not fail the call, a node busy for longer than the
// retries fails it with ErrUnreachable naming the cause, and a shutdown
// is not retried.
func TestBusyNodeRetried(t *testing.T) {
	for _, tc := range []struct {
		name     string
		body     string
		busyFor  int32 // answers before the node answers normally
		wantErr  string
		requests int32
	}{
		{"btcd at rpcmaxclients, then free", "503 Too busy.  Try again later.", 3, "", 4},
		{"Core's full work queue, then free", "Work queue depth exceeded", 2, "", 3},
		{"btcd busy throughout", "503 Too busy.  Try again later.", 1000, "client limit (btcd's rpcmaxclients)", busyRetries + 1},
		{"Core shutting down: not retried", "Request rejected during server shutdown", 1000, "the node is shutting down", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int32
			ok := rpcHandler(someHash)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if requests.Add(1) <= tc.busyFor {
					w.WriteHeader(http.StatusServiceUnavailable)
					_, _ = io.WriteString(w, tc.body)
					return
				}
				ok.ServeHTTP(w, r)
			}))
			defer srv.Close()
			c, err := NewClient(Config{Host: strings.TrimPrefix(srv.URL, "http://"), User: "u", Password: "p", Timeout: 5 * time.Second}, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			h, err := c.GetBestBlockHash(testCtx(t))
			switch {
			case tc.wantErr == "" && (err != nil || h.String() != someHash):
				t.Fatalf("got %v, %v; want %s", h, err, someHash)
			case tc.wantErr != "" && (!errors.Is(err, ErrUnreachable) || IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v; want ErrUnreachable naming %q", err, tc.wantErr)
			}
			if got := requests.Load(); got != tc.requests {
				t.Fatalf("%d requests, want %d", got, tc.requests)
			}
		})
	}
}
