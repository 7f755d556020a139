package rest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHealthAndReadiness: /healthz is always 200 "ok"; /readyz flips with the
// lag between the indexed tip (115) and the node's last seen tip.
func TestHealthAndReadiness(t *testing.T) {
	v := recordedView(t)
	m := NewMetrics()
	s, err := New(Config{}, v, m, zerologNop())
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	if resp := do(t, h, "GET", "/healthz", nil); resp.StatusCode != 200 || string(body(t, resp)) != "ok\n" {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
	ready := func(wantStatus int) readiness {
		t.Helper()
		resp := do(t, h, "GET", "/readyz", nil)
		var rd readiness
		if err := json.Unmarshal(body(t, resp), &rd); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != wantStatus || rd.Ready != (wantStatus == 200) {
			t.Fatalf("/readyz: %d %+v, want %d", resp.StatusCode, rd, wantStatus)
		}
		if wantStatus != 200 && rd.Reason == "" {
			t.Fatalf("/readyz 503 without a reason")
		}
		return rd
	}
	ready(503) // node tip unseen
	m.NodeTip(115)
	ready(200)
	m.NodeTip(117)
	ready(200)
	m.NodeTip(118)
	rd := ready(503)
	if *rd.IndexedHeight != 115 || *rd.NodeHeight != 118 {
		t.Errorf("readiness heights %+v", rd)
	}
	v.rollback(100)
	m.NodeTip(101)
	ready(200)

	lax := newTestServer(t, v, Config{ReadyMaxLag: 20})
	lax.Metrics().NodeTip(118)
	if resp := do(t, lax.Handler(), "GET", "/readyz", nil); resp.StatusCode != 200 {
		t.Errorf("ReadyMaxLag 20, lag 18: %d", resp.StatusCode)
	}
	empty := newTestServer(t, newFakeView(), Config{})
	empty.Metrics().NodeTip(0)
	if resp := do(t, empty.Handler(), "GET", "/readyz", nil); resp.StatusCode != 503 {
		t.Errorf("empty index ready: %d", resp.StatusCode)
	}
}

// TestServeLifecycle runs the server on a loopback listener, checks the
// request limits over a real connection, and shuts it down by cancelling
// the context.
func TestServeLifecycle(t *testing.T) {
	s := newTestServer(t, recordedView(t), Config{MaxURILength: 512, MaxHeaderBytes: 4096})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Timeout: 10 * time.Second}

	get := func(path string, hdr http.Header) int {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("/healthz", nil); c != 200 {
		t.Fatalf("/healthz: %d", c)
	}
	if c := get("/rest/blockfilter/basic/"+strings.Repeat("a", 600)+".bin", nil); c != http.StatusRequestURITooLong {
		t.Errorf("long URI: %d", c)
	}
	if c := get("/healthz", http.Header{"X-Big": {strings.Repeat("b", 20000)}}); c != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("big header: %d", c)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
}

// TestRunDisabledAndBadAddr: no address means HTTP is off; a bad address
// fails at once.
func TestRunDisabledAndBadAddr(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := newTestServer(t, newFakeView(), Config{}).Run(ctx); err != nil {
		t.Errorf("disabled Run: %v", err)
	}
	if err := newTestServer(t, newFakeView(), Config{Addr: "127.0.0.1:notaport"}).Run(ctx); err == nil {
		t.Error("bad address accepted")
	}
	if _, err := New(Config{WriteTimeout: -1}, newFakeView(), nil, zerologNop()); !errors.Is(err, ErrBadConfig) {
		t.Errorf("negative timeout: %v", err)
	}
	if _, err := New(Config{}, nil, nil, zerologNop()); !errors.Is(err, ErrBadConfig) {
		t.Errorf("nil view: %v", err)
	}
}
