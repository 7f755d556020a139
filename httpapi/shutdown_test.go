package httpapi

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

// A shutdown does not wait for connections that never sent a request, or
// sent part of one (net/http alone waits until they are five seconds old),
// and closes idle keep-alive connections.
func TestShutdownClosesConnectionsWithoutRequest(t *testing.T) {
	s := newTestServer(t, recordedView(t), Config{})
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: inner, accepted: make(chan struct{}, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	addr := ln.Addr().String()

	// An idle keep-alive connection that served one request.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	resp, err := client.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// Connections that sent nothing, and one that sent half a request line.
	var silent []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
	}
	if _, err := silent[2].Write([]byte("GET /heal")); err != nil {
		t.Fatal(err)
	}
	// Let the server accept them all (one for the keep-alive client).
	for range 4 {
		select {
		case <-ln.accepted:
		case <-time.After(testtime.Scale(10 * time.Second)):
			t.Fatal("server did not accept the connections")
		}
	}

	began := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(testtime.Scale(30 * time.Second)):
		t.Fatal("Serve did not return")
	}
	// net/http alone waits until the connections are five seconds old;
	// without that wait a loaded machine still returns far sooner.
	if took := time.Since(began); took > 3*time.Second {
		t.Fatalf("shutdown took %s with connections that sent no request", took)
	}
	for i, c := range silent {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 1)); err == nil {
			t.Errorf("connection %d still open after shutdown (read %d bytes)", i, n)
		}
	}
}

// countingListener signals every accepted connection.
type countingListener struct {
	net.Listener
	accepted chan struct{}
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted <- struct{}{}
	}
	return c, err
}
