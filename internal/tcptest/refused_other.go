//go:build !unix

package tcptest

import "testing"

// RefusedAddr returns a loopback address nothing listens on: a port free a
// moment ago (on unix systems the port is held for the whole test).
func RefusedAddr(tb testing.TB) string {
	tb.Helper()
	return FreeAddr(tb)
}
