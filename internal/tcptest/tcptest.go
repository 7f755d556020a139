// Package tcptest gives tests the two ends of a real TCP connection on
// 127.0.0.1, on a port the system picks, a free loopback address to
// listen on (FreeAddr) and one that refuses connections (RefusedAddr).
package tcptest

import (
	"net"
	"testing"
	"time"
)

// dialDeadline bounds the dial and the accept: generous, for a busy machine.
const dialDeadline = 30 * time.Second

// Pair returns the accepting (server) and dialing (client) ends of a
// loopback TCP connection; both are closed when the test ends.
func Pair(tb testing.TB) (server, client net.Conn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err = net.DialTimeout("tcp", ln.Addr().String(), dialDeadline)
	if err != nil {
		tb.Fatal(err)
	}
	var ok bool
	select {
	case server, ok = <-accepted:
	case <-time.After(dialDeadline):
	}
	if !ok {
		client.Close()
		tb.Fatal("accept failed")
	}
	tb.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}
