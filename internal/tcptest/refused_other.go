//go:build !unix

package tcptest

import (
	"net"
	"testing"
)

// RefusedAddr returns a loopback address nothing listens on: a port free a
// moment ago (on unix systems the port is held for the whole test).
func RefusedAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
