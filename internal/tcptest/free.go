package tcptest

import (
	"net"
	"testing"
)

// FreeAddr returns a loopback address whose port was free a moment ago,
// for a server the test starts to listen on. Nothing holds the port
// meanwhile: for an address that must refuse connections, RefusedAddr.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
