package httpapi

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

	"github.com/cfindexd/cfindexd/internal/testtime"
)

// TestHealthAndReadiness: /healthz is always 200 "ok"; /readyz is 200 only
// while the node answers, the indexed tip (115) is within ReadyMaxLag of
// the node's last seen tip and, with ReadyMaxTipAge set, its block is
// recent enough; each 503 says why.
func TestHealthAndReadiness(t *testing.T) {
	v := recordedView(t)
	tipHdr, err := v.HeaderAt(115)
	if err != nil {
		t.Fatal(err)
	}
	tipTime := tipHdr.Timestamp
	m := newTestMetrics()
	now := tipTime.Add(time.Minute)
	s, err := New(Config{}, v, m, zerologNop())
	if err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return now }
	h := s.Handler()
	if resp := do(t, h, "GET", "/healthz", nil); resp.StatusCode != 200 || string(body(t, resp)) != "ok\n" {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
	readyOn := func(h http.Handler, wantStatus int, wantReason string) readiness {
		t.Helper()
		resp := do(t, h, "GET", "/readyz", nil)
		var rd readiness
		if err := json.Unmarshal(body(t, resp), &rd); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != wantStatus || rd.Ready != (wantStatus == 200) {
			t.Fatalf("/readyz: %d %+v, want %d", resp.StatusCode, rd, wantStatus)
		}
		if wantStatus != 200 && (rd.Reason == "" || !strings.Contains(rd.Reason, wantReason)) {
			t.Fatalf("/readyz 503 with reason %q, want one saying %q", rd.Reason, wantReason)
		}
		return rd
	}
	ready := func(wantStatus int, wantReason string) readiness {
		t.Helper()
		return readyOn(h, wantStatus, wantReason)
	}
	ready(503, "node tip not seen yet")
	m.NodeReachable(errors.New("getbestblockhash: dial tcp 127.0.0.1:18443: connect: connection refused"))
	ready(503, "node unreachable: getbestblockhash: dial tcp 127.0.0.1:18443: connect: connection refused")
	m.NodeReachable(nil)
	ready(503, "node tip not seen yet")
	m.NodeTip(115, tipTime)
	rd := ready(200, "")
	if rd.IndexedTipAge == nil || *rd.IndexedTipAge != 60 {
		t.Errorf("indexed tip age %v, want 60 s", rd.IndexedTipAge)
	}
	// A tip stamped ahead of the clock (simnet mines faster than a block
	// a second) is 0 s old in /readyz, never negative (package metrics
	// checks the same of cfindexd_node_tip_age_seconds).
	now = tipTime.Add(-16 * time.Second)
	if rd := ready(200, ""); rd.IndexedTipAge == nil || *rd.IndexedTipAge != 0 {
		t.Errorf("indexed tip 16 s ahead of the clock: age %v, want 0", rd.IndexedTipAge)
	}
	now = tipTime.Add(time.Minute)
	m.NodeTip(117, tipTime)
	ready(200, "")
	m.NodeTip(118, tipTime)
	rd = ready(503, "more than 2 blocks behind the node")
	if *rd.IndexedHeight != 115 || *rd.NodeHeight != 118 {
		t.Errorf("readiness heights %+v", rd)
	}
	m.NodeTip(115, tipTime)
	m.NodeReachable(errors.New("getbestblockhash: HTTP 401"))
	ready(503, "node unreachable: getbestblockhash: HTTP 401")
	m.NodeReachable(nil)
	ready(200, "")
	// Without ReadyMaxTipAge an old tip is fine (regtest).
	now = tipTime.Add(30 * 24 * time.Hour)
	ready(200, "")

	aged := newTestServer(t, v, Config{ReadyMaxTipAge: 2 * time.Hour})
	aged.now = func() time.Time { return now }
	aged.testMetrics().NodeTip(115, tipTime)
	aged.testMetrics().NodeReachable(nil)
	now = tipTime.Add(2 * time.Hour)
	readyOn(aged.Handler(), 200, "")
	now = tipTime.Add(2*time.Hour + time.Second)
	readyOn(aged.Handler(), 503, "indexed tip's block is 2h0m1s old, more than 2h0m0s")

	v.rollback(100)
	m.NodeTip(101, tipTime)
	ready(200, "")

	lax := newTestServer(t, v, Config{ReadyMaxLag: 20})
	lax.testMetrics().NodeTip(118, tipTime)
	readyOn(lax.Handler(), 200, "")
	empty := newTestServer(t, newFakeView(), Config{})
	empty.testMetrics().NodeTip(0, tipTime)
	readyOn(empty.Handler(), 503, "nothing indexed yet")
	if _, err := New(Config{ReadyMaxTipAge: -time.Second}, v, newTestMetrics(), zerologNop()); !errors.Is(err, ErrBadConfig) {
		t.Errorf("negative ReadyMaxTipAge: %v", err)
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
	client := &http.Client{Timeout: testtime.Scale(10 * time.Second)}

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
	case <-time.After(testtime.Scale(10 * time.Second)):
		t.Fatal("Serve did not return after cancel")
	}
}

// TestNewRefusesBadConfig: New refuses a negative limit, a nil view and
// nil metrics.
func TestNewRefusesBadConfig(t *testing.T) {
	if _, err := New(Config{WriteTimeout: -1}, newFakeView(), newTestMetrics(), zerologNop()); !errors.Is(err, ErrBadConfig) {
		t.Errorf("negative timeout: %v", err)
	}
	if _, err := New(Config{}, nil, newTestMetrics(), zerologNop()); !errors.Is(err, ErrBadConfig) {
		t.Errorf("nil view: %v", err)
	}
	if _, err := New(Config{}, newFakeView(), nil, zerologNop()); !errors.Is(err, ErrBadConfig) {
		t.Errorf("nil metrics: %v", err)
	}
}
