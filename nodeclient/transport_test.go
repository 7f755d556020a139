package nodeclient

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/corefixture"
)

// Every request carries "jsonrpc":"1.0" (btcd insists) and Basic auth, and
// consecutive calls reuse one keep-alive connection.
func TestRequestsAreJSONRPC10OverKeepAlive(t *testing.T) {
	fx := corefixture.Load(t)
	var mu sync.Mutex
	conns := map[string]bool{}
	var bodies []map[string]any
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || user != "u" || pass != "p" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var req map[string]any
		if err := json.Unmarshal(raw, &req); err != nil {
			t.Errorf("request body %q: %v", raw, err)
		}
		mu.Lock()
		bodies = append(bodies, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"result":"`+fx.Tip.String()+`","error":null,"id":1}`+"\n")
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns[c.RemoteAddr().String()] = true
			mu.Unlock()
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := NewClient(Config{Host: strings.TrimPrefix(srv.URL, "http://"), User: "u", Password: "p"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := c.GetBestBlockHash(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(conns) != 1 {
		t.Errorf("%d connections for 5 sequential calls, want 1 (keep-alive)", len(conns))
	}
	for _, b := range bodies {
		if b["jsonrpc"] != "1.0" || b["method"] != "getbestblockhash" {
			t.Errorf("request %v", b)
		}
		if _, ok := b["params"].([]any); !ok {
			t.Errorf("params must be an array, got %v", b["params"])
		}
	}
}

// A node that accepts the request but never answers (or drops the
// connection half-way through a reply) is unreachable, not malformed.
func TestStalledAndDroppedReplies(t *testing.T) {
	for _, tt := range []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"stalled", func(w http.ResponseWriter, r *http.Request) {
			// Reading the body lets the server notice the client hang up.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		}},
		{"dropped mid-reply", func(w http.ResponseWriter, r *http.Request) {
			hj, _ := w.(http.Hijacker)
			conn, buf, err := hj.Hijack()
			if err != nil {
				return
			}
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"result\":\"00")
			_ = buf.Flush()
			_ = conn.Close()
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			c, err := NewClient(Config{Host: strings.TrimPrefix(srv.URL, "http://"), User: "u", Password: "p", Timeout: 200 * time.Millisecond}, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.GetBestBlockHash(testCtx(t))
			if !errors.Is(err, ErrUnreachable) {
				t.Fatalf("got %v, want ErrUnreachable", err)
			}
		})
	}
}
